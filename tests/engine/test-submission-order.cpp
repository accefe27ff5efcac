// SubmissionOrder: a group's requests handed on in the order they were submitted whatever order their
// preparation ends in, a failed or cancelled one letting the later ones through, groups independent of one
// another and group 0 unordered.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/common/error.h"
#include "engine/service/submission-order.h"

using namespace folio;

namespace {

using Order = SubmissionOrder<std::string>;

std::vector<int64_t> ids_of(const std::vector<std::pair<int64_t, std::string>>& ready) {
    std::vector<int64_t> ids;
    for (const auto& entry : ready) {
        ids.push_back(entry.first);
    }
    return ids;
}

}  // namespace

TEST(SubmissionOrder, ALaterRequestWaitsForAnEarlierOneOfItsGroup) {
    Order order;
    for (int64_t id = 1; id <= 3; ++id) {
        order.begin(7, id);
    }
    EXPECT_TRUE(order.end(7, 3, "c").empty()) << "3 waits for 1 and 2";
    EXPECT_TRUE(order.end(7, 2, "b").empty()) << "2 waits for 1";
    EXPECT_EQ(order.n_waiting(), 2);
    const auto ready = order.end(7, 1, "a");
    EXPECT_EQ(ids_of(ready), (std::vector<int64_t>{1, 2, 3}));
    ASSERT_EQ(ready.size(), 3u);
    EXPECT_EQ(ready[0].second, "a");
    EXPECT_EQ(ready[2].second, "c");
    EXPECT_EQ(order.n_waiting(), 0);
}

TEST(SubmissionOrder, AFailedOrCancelledRequestLetsTheLaterOnesThrough) {
    Order order;
    for (int64_t id = 10; id <= 13; ++id) {
        order.begin(1, id);
    }
    EXPECT_TRUE(order.end(1, 12, "twelve").empty());
    EXPECT_TRUE(order.end(1, 11, "eleven").empty());
    EXPECT_EQ(ids_of(order.end(1, 10, std::nullopt)), (std::vector<int64_t>{11, 12}))
        << "10 ended with nothing to hand on";
    EXPECT_EQ(ids_of(order.end(1, 13, "thirteen")), (std::vector<int64_t>{13}));
}

TEST(SubmissionOrder, GroupsWaitOnlyForThemselvesAndGroupZeroForNothing) {
    Order order;
    order.begin(1, 1);
    order.begin(2, 2);
    order.begin(0, 3);
    order.begin(1, 4);
    EXPECT_EQ(ids_of(order.end(0, 3, "loose")), (std::vector<int64_t>{3}));
    EXPECT_EQ(ids_of(order.end(2, 2, "other group")), (std::vector<int64_t>{2}));
    EXPECT_TRUE(order.end(1, 4, "late").empty());
    EXPECT_EQ(ids_of(order.end(1, 1, "first")), (std::vector<int64_t>{1, 4}));
    EXPECT_EQ(order.n_waiting(), 0);
}

TEST(SubmissionOrder, AGroupStartsAfreshOnceEverythingInItWasHandedOn) {
    Order order;
    order.begin(5, 1);
    EXPECT_EQ(ids_of(order.end(5, 1, "a")), (std::vector<int64_t>{1}));
    order.begin(5, 2);
    EXPECT_EQ(ids_of(order.end(5, 2, "b")), (std::vector<int64_t>{2}));
}

TEST(SubmissionOrder, ARequestSubmittedOutOfOrderIsRefused) {
    Order order;
    order.begin(3, 8);
    EXPECT_THROW(order.begin(3, 8), Error);
    EXPECT_THROW(order.begin(3, 5), Error);
}

// Any order of ends hands on each request once, the ids of a group ascending overall.
TEST(SubmissionOrder, EveryOrderOfEndsHandsOnEachOnceInOrder) {
    std::mt19937 rng(3);
    for (int trial = 0; trial < 200; ++trial) {
        Order order;
        std::vector<int64_t> ids(12);
        std::iota(ids.begin(), ids.end(), 100);
        for (const int64_t id : ids) {
            order.begin(1 + id % 2, id);
        }
        std::shuffle(ids.begin(), ids.end(), rng);
        std::vector<int64_t> handed[2];
        for (const int64_t id : ids) {
            const bool fails = id == 104 || id == 107;
            for (const auto& entry :
                 order.end(1 + id % 2, id, fails ? std::nullopt : std::optional<std::string>("x"))) {
                handed[entry.first % 2].push_back(entry.first);
            }
        }
        for (const std::vector<int64_t>& h : handed) {
            EXPECT_TRUE(std::is_sorted(h.begin(), h.end()));
            EXPECT_EQ(h.size(), 5u) << "6 a group, one of them failed";
        }
        EXPECT_EQ(order.n_waiting(), 0);
    }
}
