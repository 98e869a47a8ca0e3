// The table's memory and hand-over cases: what a backend makes, copies and hands over holds the
// same bits on every backend.
#include "tests/backends/op_table.hpp"
#include "tests/backends/parity_measures.hpp"

namespace petra::testing {

std::vector<op_case> memory_cases() {
  std::vector<op_case> cases;
  std::mt19937 rng(5);
  const tensor x = random_host({3, 4, 5}, rng);
  cases.push_back({"zeros, empty, copy, fill_zero, synchronize; empty shapes",
                   {x},
                   [](backend& be, std::vector<tensor>& in) {
                     tensor copied = be.empty(in[0].shape()), cleared = be.empty({2, 2});
                     be.copy(in[0], copied);
                     be.fill_zero(cleared);
                     const tensor zeros = be.zeros({7, 3});
                     be.synchronize();
                     return op_result{{zeros, copied, cleared, be.zeros({0, 3}), be.empty({0, 3})}};
                   },
                   {parity::exact}});
  cases.push_back({"to_host and from_host (a deep copy of the values at the call); a reshaped view",
                   {x},
                   [](backend& be, std::vector<tensor>& in) {
                     const tensor host = be.to_host(in[0]);
                     tensor scratch = host.clone();
                     const tensor uploaded = be.from_host(scratch);
                     scratch.data()[0] = 42.f;  // after the call: not seen by the backend's copy
                     return op_result{{uploaded, in[0].reshaped({12, 5})}, {}, {host}};
                   },
                   {parity::exact}});
  cases.push_back(
      {"export_for the host and import back, export_for this device and import; undefined passes",
       {x},
       [](backend& be, std::vector<tensor>& in) {
         const tensor host = be.export_for(in[0], device{});
         const tensor back = be.import(host);
         const tensor same = be.import(be.export_for(in[0], be.where()));
         return op_result{{back, same, be.import(tensor{})}, {}, {host, be.export_for(tensor{}, device{})}};
       },
       {parity::exact}});
  return cases;
}

}  // namespace petra::testing
