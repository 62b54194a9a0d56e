// Landscapes from map files and from the seed study's peaks.
#include "games/sugarscape/landscape.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "core/base/errors.h"

namespace troupe::sugarscape {

extern const char kClassicMapText[];  // sugar_map_data.cc, generated from data/sugar-map.txt

int Landscape::MaxCapacity() const {
  int m = 0;
  for (int8_t c : sugar) m = std::max<int>(m, c);
  for (int8_t c : spice) m = std::max<int>(m, c);
  return m;
}

Landscape ParseMap(const std::string& text, const std::string& origin) {
  Landscape l;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  std::vector<std::vector<int8_t>> rows;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::istringstream cells(line);
    std::vector<int8_t> row;
    std::string cell;
    while (cells >> cell) {
      int v = -1;
      try {
        size_t used = 0;
        v = std::stoi(cell, &used);
        if (used != cell.size()) v = -1;
      } catch (const std::exception&) {
        v = -1;
      }
      if (v < 0 || v > 127) {
        throw GameError(origin + ":" + std::to_string(number) + ": '" + cell +
                        "' is not a capacity (an integer 0..127)");
      }
      row.push_back(static_cast<int8_t>(v));
    }
    if (!rows.empty() && row.size() != rows.front().size()) {
      throw GameError(origin + ":" + std::to_string(number) + ": " + std::to_string(row.size()) +
                      " cells, but the first row has " + std::to_string(rows.front().size()));
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw GameError(origin + ": no rows of capacities");
  l.height = static_cast<int>(rows.size());
  l.width = static_cast<int>(rows.front().size());
  l.sugar.resize(static_cast<size_t>(l.width) * l.height);
  l.spice.resize(l.sugar.size());
  for (int y = 0; y < l.height; ++y) {
    for (int x = 0; x < l.width; ++x) {
      l.sugar[static_cast<size_t>(y) * l.width + x] = rows[y][x];
      l.spice[static_cast<size_t>(y) * l.width + x] = rows[y][l.width - 1 - x];
    }
  }
  return l;
}

Landscape ReadMapFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw GameError(path + ": cannot open the landscape file");
  std::stringstream text;
  text << in.rdbuf();
  return ParseMap(text.str(), path);
}

Landscape ClassicMap() { return ParseMap(kClassicMapText, "sugar-map.txt"); }

Landscape PeaksTorus(int size) {
  Landscape l;
  l.width = l.height = size;
  l.sugar.resize(static_cast<size_t>(size) * size);
  l.spice.resize(l.sugar.size());
  const int lo = static_cast<int>(std::lround(0.3 * size)), hi = static_cast<int>(std::lround(0.7 * size));
  auto torus = [size](int a, int b) {
    const int d = std::abs(a - b) % size;
    return std::min(d, size - d);
  };
  auto capacity = [&](int x, int y, std::initializer_list<std::pair<int, int>> peaks) {
    double nearest = 1e9;
    for (auto [px, py] : peaks) {
      const double dx = torus(x, px), dy = torus(y, py);
      nearest = std::min(nearest, std::sqrt(dx * dx + dy * dy));
    }
    return static_cast<int8_t>(nearest <= 5 ? 4 : nearest <= 10 ? 3 : nearest <= 15 ? 2 : nearest <= 20 ? 1 : 0);
  };
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      l.sugar[static_cast<size_t>(y) * size + x] = capacity(x, y, {{lo, lo}, {hi, hi}});
      l.spice[static_cast<size_t>(y) * size + x] = capacity(x, y, {{lo, hi}, {hi, lo}});
    }
  }
  return l;
}

Landscape MakeLandscape(const std::string& spec, int size) {
  if (spec == "classic") return ClassicMap();
  if (spec == "peaks") return PeaksTorus(size);
  if (spec.rfind("file:", 0) == 0) return ReadMapFile(spec.substr(5));
  throw GameError("landscape '" + spec + "' is not classic, peaks or file:PATH");
}

}  // namespace troupe::sugarscape
