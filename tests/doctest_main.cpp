// The one doctest main every test executable shares. A run in which nothing failed and every test
// case that started was skipped (PETRA_SKIP) exits with the skip return code, so ctest, which runs
// one test case per process, reports it as skipped. A run whose filters match no test case fails:
// ctest names each case by a filter, and a name the filter cannot express (CMake splits a test name
// at ';') would otherwise run nothing and pass.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>
#include <set>

#include "tests/skip.hpp"

namespace {

struct skip_tally {
  int started = 0;
  int passing_filters = -1;  // test cases the filters selected (-1: the run did not get that far)
  std::set<std::string> skipped;
};

skip_tally& tally() {
  static skip_tally t;  // the test run's own bookkeeping, local to this executable
  return t;
}

/// Counts the test cases that start, so that "every case was skipped" can be told apart.
struct case_counter : doctest::IReporter {
  explicit case_counter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    tally().passing_filters = static_cast<int>(stats.numTestCasesPassingFilters);
  }
  void test_case_start(const doctest::TestCaseData&) override { ++tally().started; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

REGISTER_LISTENER("petra_case_counter", 1, case_counter);

namespace petra::testing {

void mark_skipped(const std::string& why) {
  const std::string name =
      doctest::getContextOptions()->currentTest ? doctest::getContextOptions()->currentTest->m_name : "?";
  if (tally().skipped.insert(name).second) std::cout << "skipped: " << name << ": " << why << std::endl;
}

}  // namespace petra::testing

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int failures = context.run();
  if (context.shouldExit()) return failures;
  const skip_tally& t = tally();
  if (failures == 0 && t.passing_filters == 0) {
    std::cerr << "no test case matches the filters given (a name ctest cannot pass whole?)" << std::endl;
    return 1;
  }
  if (failures == 0 && t.started > 0 && static_cast<int>(t.skipped.size()) == t.started)
    return petra::testing::skip_return_code;
  return failures;
}
