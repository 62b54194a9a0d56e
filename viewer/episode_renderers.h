// Per-game episode views, registered by game name (the same registry pattern
// as games). A renderer draws one episode up to a message cursor; games
// without one get the generic view (messages and the final state's text).
#pragma once

#include <cstddef>
#include <memory>

#include "core/base/registry.h"
#include "viewer/session_model.h"

namespace troupe::view {

class EpisodeRenderer {
 public:
  virtual ~EpisodeRenderer() = default;
  // `shown`: how many of the episode's messages to show (replay cursor).
  virtual void Draw(const SessionModel& model, const EpisodeRecord& episode, size_t shown) = 0;
};

using EpisodeRendererRegistry = Registry<EpisodeRenderer>;

// The generic view, also used by renderers for their message lists.
void DrawMessageList(const SessionModel& model, const EpisodeRecord& episode, size_t shown);
// A small sparkline of latent vector norms, with K x width.
void DrawLatentSummary(const MessageRow& row);

}  // namespace troupe::view

#define TROUPE_REGISTER_EPISODE_RENDERER(name, Type) \
  TROUPE_REGISTER(::troupe::view::EpisodeRendererRegistry, name, []() { return std::make_unique<Type>(); })
