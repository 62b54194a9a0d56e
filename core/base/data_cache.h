// Where fetched data lives (scripts/fetch_data.sh puts it there): real
// corpora and the reference tokenizers, shared by every clone.
#pragma once

#include <string>

namespace troupe {

// $TROUPE_CACHE, else $XDG_CACHE_HOME/troupe, else $HOME/.cache/troupe.
std::string DataCacheDir();

// DataCacheDir()/relative when it exists; else throws Error saying which
// command fetches it.
std::string RequireCached(const std::string& relative);

}  // namespace troupe
