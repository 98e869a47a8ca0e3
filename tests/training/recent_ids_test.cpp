// recent_ids: duplicates within the remembered window are found, the memory stays bounded over a
// long run, and an erased id is new again.
#include "training/recent_ids.hpp"

#include <doctest/doctest.h>

using petra::training::recent_ids;

TEST_CASE("recent ids: a duplicate is found, an erased id is new again") {
  recent_ids seen(8);
  CHECK(seen.insert(3));
  CHECK(seen.insert(1));
  CHECK_FALSE(seen.insert(3));
  seen.erase(3);
  CHECK(seen.insert(3));
  CHECK(seen.contains(1));
  seen.clear();
  CHECK(seen.size() == 0);
  CHECK(seen.insert(1));
}

TEST_CASE("recent ids: 200,000 ids in a shuffled window keep at most the memory, every duplicate found") {
  const std::size_t memory = 64;
  recent_ids seen(memory);
  int64_t duplicates_found = 0, duplicates_sent = 0;
  for (int64_t id = 0; id < 200000; ++id) {
    // Ids arrive slightly out of order (swapped in pairs), and every 10th is sent twice, the
    // second copy up to 20 ids later: well inside the memory.
    const int64_t arriving = (id % 2 == 0) ? id + 1 : id - 1;
    CHECK(seen.insert(arriving));
    if (id >= 20 && id % 10 == 0) {
      ++duplicates_sent;
      if (!seen.insert(id - 20)) ++duplicates_found;
    }
    REQUIRE(seen.size() <= memory);
  }
  CHECK(duplicates_sent > 19000);
  CHECK(duplicates_found == duplicates_sent);
}

TEST_CASE("recent ids: when full, the smallest id is the one forgotten") {
  recent_ids seen(3);
  for (int64_t id : {10, 11, 12, 13}) CHECK(seen.insert(id));
  CHECK_FALSE(seen.contains(10));
  CHECK(seen.contains(11));
  CHECK(seen.contains(13));
  CHECK(seen.insert(5));  // older than every kept id: passes as new, and is not kept
  CHECK_FALSE(seen.contains(5));
  CHECK(seen.size() == 3);
}
