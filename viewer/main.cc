// troupe-view: a live Dear ImGui + GLFW + OpenGL3 viewer of a running or
// recorded troupe session. Follows `troupe train --publish ENDPOINT` with
// --connect, or opens a session file; both can be switched in the window.
// Headless: --screenshot OUT.png renders a few frames and writes the last.
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "viewer/panels/panels.h"
#include "viewer/view_state.h"

namespace {

using namespace troupe::view;

const char* kUsage = R"(usage: troupe-view [FILE | --connect ENDPOINT] [options]

  FILE                 a session file (troupe train --record FILE, troupe record)
  --connect ENDPOINT   follow a live run (troupe train --publish ENDPOINT)
  --compare FILE       also draw this recorded run's curves (repeatable)
  --keys DIR           CurveZMQ client keys (troupe keys) when the run publishes with them
  --screenshot OUT.png render headless frames and write the last one, then exit
  --frames N           frames before the screenshot (default 5)
  --panel NAME         only this panel, full window: graph, episode, messages, training, controls
  --size WxH           window size (default 1280x800)
  --iteration N --episode E --message M   where the replay cursor starts
  --bench-frames N     draw N frames after loading and print frame times (ms), then exit
  --seconds S          with --screenshot: follow a live run up to S seconds (or until it ends) first
)";

struct Options {
  std::string file, connect, screenshot, panel, keys;
  std::vector<std::string> compare;
  int frames = 5, width = 1280, height = 800, bench_frames = 0;
  double seconds = 0;
  int iteration = -1, episode = -1;
  long message = -1;
};

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--connect") o.connect = next();
    else if (a == "--compare") o.compare.push_back(next());
    else if (a == "--keys") o.keys = next();
    else if (a == "--screenshot") o.screenshot = next();
    else if (a == "--frames") o.frames = std::stoi(next());
    else if (a == "--panel") o.panel = next();
    else if (a == "--bench-frames") o.bench_frames = std::stoi(next());
    else if (a == "--seconds") o.seconds = std::stod(next());
    else if (a == "--iteration") o.iteration = std::stoi(next());
    else if (a == "--episode") o.episode = std::stoi(next());
    else if (a == "--message") o.message = std::stol(next());
    else if (a == "--size") {
      const std::string s = next();
      if (std::sscanf(s.c_str(), "%dx%d", &o.width, &o.height) != 2) throw std::runtime_error("--size needs WxH");
    } else if (!a.empty() && a[0] == '-') throw std::runtime_error("unknown option " + a);
    else o.file = a;
  }
  if (!o.panel.empty()) {
    bool known = false;
    for (const auto& p : Panels()) known = known || o.panel == p.name;
    if (!known)
      throw std::runtime_error("unknown panel '" + o.panel + "' (graph, episode, messages, training, controls)");
  }
  return o;
}

bool WriteScreenshot(const std::string& path, int w, int h) {
  std::vector<unsigned char> pixels(static_cast<size_t>(w) * h * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  std::vector<unsigned char> flipped(pixels.size());
  for (int y = 0; y < h; ++y) {
    std::copy_n(&pixels[static_cast<size_t>(h - 1 - y) * w * 4], static_cast<size_t>(w) * 4,
                &flipped[static_cast<size_t>(y) * w * 4]);
  }
  return stbi_write_png(path.c_str(), w, h, 4, flipped.data(), w * 4) != 0;
}

std::string IniPath() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  std::filesystem::path dir =
      xdg ? std::filesystem::path(xdg) / "troupe" : std::filesystem::path(home ? home : ".") / ".config" / "troupe";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return (dir / "troupe-view.ini").string();
}

// The default layout at 1280x800; windows keep what the user makes of them (ini file).
void DrawWindows(ViewState& state, const Options& o, int w, int h) {
  if (!o.panel.empty()) {
    for (const auto& p : Panels()) {
      if (o.panel != p.name) continue;
      ImGui::SetNextWindowPos(ImVec2(0, 0));
      ImGui::SetNextWindowSize(ImVec2(static_cast<float>(w), static_cast<float>(h)));
      ImGui::Begin(p.title, nullptr, ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse);
      p.draw(state);
      ImGui::End();
    }
    return;
  }
  const float W = static_cast<float>(w), H = static_cast<float>(h), left = std::round(W * 0.34f);
  auto window = [&](const char* title, ImVec2 pos, ImVec2 size, void (*draw)(ViewState&)) {
    ImGui::SetNextWindowPos(pos, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize(size, ImGuiCond_FirstUseEver);
    ImGui::Begin(title);
    draw(state);
    ImGui::End();
  };
  window("Workflow graph", ImVec2(0, 0), ImVec2(left, H * 0.47f), DrawGraphPanel);
  window("Controls", ImVec2(0, H * 0.47f), ImVec2(left, H * 0.53f), DrawControlsPanel);
  window("Episode", ImVec2(left, 0), ImVec2(W - left, H * 0.5f), DrawEpisodePanel);
  ImGui::SetNextWindowPos(ImVec2(left, H * 0.5f), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSize(ImVec2(W - left, H * 0.5f), ImGuiCond_FirstUseEver);
  ImGui::Begin("Run");
  if (ImGui::BeginTabBar("run_tabs")) {
    if (ImGui::BeginTabItem("Training")) {
      DrawTrainingPanel(state);
      ImGui::EndTabItem();
    }
    if (ImGui::BeginTabItem("Messages")) {
      DrawMessagesPanel(state);
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
  ImGui::End();
}

// Opens the session file or live endpoint and the runs to compare; false when the file is unreadable.
bool OpenSources(const Options& o, ViewState& state) {
  state.keys_dir = o.keys;
  if (!o.file.empty()) {
    if (!state.OpenFile(o.file)) {
      std::fprintf(stderr, "troupe-view: %s\n", state.source_error.c_str());
      return false;
    }
  } else if (!o.connect.empty()) {
    state.Connect(o.connect);
  }
  for (const auto& path : o.compare) {
    FileSource src(path);
    ComparedRun run;
    run.name = std::filesystem::path(path).stem().string();
    std::vector<troupe::session::Event> events;
    src.Take(&events, SIZE_MAX);
    for (const auto& e : events) run.model.Add(e);
    if (!src.error().empty()) std::fprintf(stderr, "troupe-view: %s: %s\n", path.c_str(), src.error().c_str());
    state.compare.push_back(std::move(run));
  }
  if (!state.source_error.empty()) std::fprintf(stderr, "troupe-view: %s\n", state.source_error.c_str());
  return true;
}

// A GLFW window with an OpenGL 3.3 core context and ImGui on it, or nullptr (the reason printed).
GLFWwindow* CreateWindow(const Options& o, bool headless) {
  if (!glfwInit()) {
    std::fprintf(stderr, "troupe-view: cannot initialise GLFW (no display? run under xvfb-run)\n");
    return nullptr;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  if (headless) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
  GLFWwindow* window = glfwCreateWindow(o.width, o.height, "troupe-view", nullptr, nullptr);
  if (window == nullptr) {
    std::fprintf(stderr, "troupe-view: cannot open a %dx%d OpenGL 3.3 window\n", o.width, o.height);
    glfwTerminate();
    return nullptr;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(headless ? 0 : 1);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  static std::string ini = IniPath();
  io.IniFilename = headless ? nullptr : ini.c_str();
  const char* font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  if (std::filesystem::exists(font)) io.Fonts->AddFontFromFileTTF(font, 15.0f);
  ImGui::StyleColorsDark();
  ImGui::GetStyle().WindowRounding = 4.0f;
  // Anti-aliased fills add a fringe of triangles to every shape; at this DPI they
  // are not visible, and a software renderer pays for every triangle.
  ImGui::GetStyle().AntiAliasedFill = false;
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330");
  return window;
}

void DestroyWindow(GLFWwindow* window) {
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
}

// The frame loop in the reference order (poll, new frame, draw, render, swap).
// Returns 0, or 3 when a screenshot could not be written; fills frame times when benchmarking.
int RunFrames(const Options& o, ViewState& state, GLFWwindow* window, std::vector<double>* frame_ms) {
  int frame = 0;
  auto last = std::chrono::steady_clock::now();
  const auto start = last;
  int ended_at = -1;
  // Power saving: while nobody touches the window, draw 10 frames a second
  // (a live run changes a few times a second); input brings back full speed.
  double last_input = glfwGetTime();
  while (!glfwWindowShouldClose(window)) {
    const bool idle = o.bench_frames == 0 && glfwGetTime() - last_input > 1.0 && !state.playing;
    if (idle) glfwWaitEventsTimeout(0.1);
    else glfwPollEvents();
    const ImGuiIO& io_now = ImGui::GetIO();
    if (io_now.MouseDelta.x != 0 || io_now.MouseDelta.y != 0 || io_now.MouseWheel != 0 || ImGui::IsAnyMouseDown() ||
        ImGui::IsAnyItemActive() || io_now.InputQueueCharacters.Size > 0) {
      last_input = glfwGetTime();
    }
    const auto t0 = std::chrono::steady_clock::now();
    state.Pump(20000);
    state.Advance(std::chrono::duration<double>(t0 - last).count());
    last = t0;
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    int w = 0, h = 0;
    glfwGetFramebufferSize(window, &w, &h);
    DrawWindows(state, o, w, h);
    ImGui::Render();
    glViewport(0, 0, w, h);
    glClearColor(0.09f, 0.10f, 0.12f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    glFinish();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    state.frame_ms = ms;
    ++frame;
    if (o.bench_frames > 0) {
      if (frame > 3) frame_ms->push_back(ms);  // the first frames build fonts and caches
      if (static_cast<int>(frame_ms->size()) >= o.bench_frames) break;
    }
    // Following a live run: stop waiting once it has ended (and its last events are in).
    const std::string& status = state.model.status();
    if (ended_at < 0 && (status == "ended" || status.rfind("failed", 0) == 0)) ended_at = frame;
    const bool waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= o.seconds ||
                        (ended_at >= 0 && frame > ended_at + 10);
    if (!o.screenshot.empty() && frame >= o.frames && waited) {
      if (!WriteScreenshot(o.screenshot, w, h)) {
        std::fprintf(stderr, "troupe-view: cannot write %s\n", o.screenshot.c_str());
        return 3;
      }
      std::printf("wrote %s (%dx%d, %d frames)\n", o.screenshot.c_str(), w, h, frame);
      break;
    }
    glfwSwapBuffers(window);
  }
  return 0;
}

// What the source delivered, and frame-time figures when benchmarking.
void Report(const ViewState& state, const std::vector<double>& frame_ms) {
  if (state.source) {
    std::printf("events %lld, dropped here %lld, missed %lld, status: %s%s%s\n",
                static_cast<long long>(state.model.events()), static_cast<long long>(state.source->dropped()),
                static_cast<long long>(state.source->missed()), state.model.status().c_str(),
                state.source_error.empty() ? "" : "; source: ", state.source_error.c_str());
  }
  if (frame_ms.empty()) return;
  std::vector<double> sorted = frame_ms;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (double v : frame_ms) sum += v;
  std::printf("{\"frames\":%zu,\"mean_ms\":%.3f,\"p50_ms\":%.3f,\"p95_ms\":%.3f,\"max_ms\":%.3f,\"events\":%lld}\n",
              frame_ms.size(), sum / frame_ms.size(), sorted[sorted.size() / 2], sorted[sorted.size() * 95 / 100],
              sorted.back(), static_cast<long long>(state.model.events()));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = Parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "troupe-view: %s\n%s", e.what(), kUsage);
    return 2;
  }
  ViewState state;
  if (!OpenSources(o, state)) return 1;
  const bool headless = !o.screenshot.empty() || o.bench_frames > 0;
  GLFWwindow* window = CreateWindow(o, headless);
  if (window == nullptr) return 3;
  // A file is taken in whole before the first frame; a live run in bounded bites per frame.
  if (state.source && !state.source->live()) state.Pump(SIZE_MAX);
  if (o.iteration >= 0) {
    state.follow = false;
    state.selected_iteration = state.iteration_cursor = o.iteration;
  }
  if (o.episode >= 0) state.selected_episode = o.episode;
  if (o.message >= 0) state.message_cursor = static_cast<size_t>(o.message);
  std::vector<double> frame_ms;
  const int status = RunFrames(o, state, window, &frame_ms);
  if (status == 0) Report(state, frame_ms);
  DestroyWindow(window);
  return status;
}
