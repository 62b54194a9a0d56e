// Sugarscape landscapes: the capacity of every cell for sugar and for spice.
// Three sources: the classic map file (Epstein & Axtell's, as Mesa's
// sugarscape_g1mt ships it; spice is the same map mirrored left-right), any
// map file of the same form, and the seed study's torus with four peaks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe::sugarscape {

struct Landscape {
  int width = 0, height = 0;
  std::vector<int8_t> sugar, spice;  // capacity per cell, cell = y * width + x
  int MaxCapacity() const;
};

// A map file: `height` lines of `width` whitespace-separated integers 0..127
// (rows are y, columns x); spice is the map mirrored left-right. `origin`
// names it in errors (GameError with origin:line).
Landscape ParseMap(const std::string& text, const std::string& origin);
Landscape ReadMapFile(const std::string& path);
// The classic 50 x 50 map (games/sugarscape/data/sugar-map.txt, built in).
Landscape ClassicMap();

// The seed study's landscape: a torus of `size` x `size` with sugar peaks at
// (0.3, 0.3) and (0.7, 0.7) of its side, spice at (0.3, 0.7) and (0.7, 0.3)
// ((15,15), (35,35) and (15,35), (35,15) on 50 x 50); capacity by torus
// distance d to the nearest peak of that resource: d <= 5: 4, <= 10: 3,
// <= 15: 2, <= 20: 1, else 0.
Landscape PeaksTorus(int size);

// Makes a landscape from the `landscape` parameter: "classic", "peaks" (of
// `size`), or "file:PATH".
Landscape MakeLandscape(const std::string& spec, int size);

}  // namespace troupe::sugarscape
