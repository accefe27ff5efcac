// The requests of a group handed on in the order they were submitted, however their preparation finishes: one
// prepared before an earlier one of its group waits for it. The document pipeline submits a page's blocks in
// reading order, so the page's first block is the first to start and its text appears from the top. Group 0
// is unordered.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/common/error.h"

namespace folio {

template <typename T>
class SubmissionOrder {
public:
    // Request id of group starts its preparation; ids of a group are submitted in increasing order.
    void begin(int64_t group, int64_t id) {
        if (group == 0) {
            return;
        }
        Group& g = groups_[group];
        if (!g.preparing.empty() && id <= *g.preparing.rbegin()) {
            fail("submission order: request ", id, " of group ", group, " after request ",
                 *g.preparing.rbegin());
        }
        g.preparing.insert(id);
    }

    // Request id's preparation ended with what it made, or with nothing (it failed or was cancelled). Returns
    // what may be handed on now, in the order of submission: made itself at once for group 0.
    std::vector<std::pair<int64_t, T>> end(int64_t group, int64_t id, std::optional<T> made) {
        std::vector<std::pair<int64_t, T>> ready;
        const auto it = groups_.find(group);
        if (it == groups_.end()) {
            if (made) {
                ready.emplace_back(id, std::move(*made));
            }
            return ready;
        }
        Group& g = it->second;
        g.preparing.erase(id);
        if (made) {
            g.prepared.emplace(id, std::move(*made));
        }
        while (!g.prepared.empty() &&
               (g.preparing.empty() || g.prepared.begin()->first < *g.preparing.begin())) {
            ready.emplace_back(g.prepared.begin()->first, std::move(g.prepared.begin()->second));
            g.prepared.erase(g.prepared.begin());
        }
        if (g.preparing.empty() && g.prepared.empty()) {
            groups_.erase(it);
        }
        return ready;
    }

    // Requests prepared and waiting for an earlier one.
    int64_t n_waiting() const {
        int64_t n = 0;
        for (const auto& entry : groups_) {
            n += static_cast<int64_t>(entry.second.prepared.size());
        }
        return n;
    }

    void clear() { groups_.clear(); }

private:
    struct Group {
        std::set<int64_t> preparing;    // ids whose preparation has not ended
        std::map<int64_t, T> prepared;  // ids prepared behind an earlier one still preparing
    };
    std::unordered_map<int64_t, Group> groups_;
};

}  // namespace folio
