// Placeholder for troupe-view (Dear ImGui + GLFW); the viewer issue fills it in.
#include <cstdio>

int main() {
  std::fprintf(stderr, "troupe-view: not built yet (see the viewer issue)\n");
  return 1;
}
