#pragma once
// The steps a driver's machines took: each traced in the log, and kept once record() is
// called, so that the tests read which (state, event) an input raised from here, never from
// the log's text.

#include <string>
#include <vector>

namespace rdmax {

class StepLog {
 public:
  // The state a step left and its event, by their names (protocol/enum_names.hpp; "all
  // settled" for the end of a session).
  struct Step {
    const char* from;
    const char* event;
  };

  void record() { recording_ = true; }
  const std::vector<Step>& steps() const { return steps_; }
  void took(const std::string& label, const char* from, const char* event, const char* to);

 private:
  bool recording_ = false;
  std::vector<Step> steps_;
};

}  // namespace rdmax
