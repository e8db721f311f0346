#pragma once
// A row of a machine's transition table as both drivers' rows tests drive it
// (receiver_driver_rows_test.cpp, sender_driver_rows_test.cpp): the (state, event) it
// covers, how the driver is brought to the state, how the event is raised, and what the
// driver must then have done, and how a row test drives it (drive_row). The names come from
// the machines' to_string (found by ADL).

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>

namespace rdmax::test {

// The (state, event) of a row, and how the event was raised where a row has several ways.
template <typename State, typename Event>
struct RowAt {
  State state;
  Event event;
  const char* variant = "";  // not std::string: GCC 12 -O2 misreports it as uninitialized
};

template <typename State, typename Event, typename Step, typename Want>
struct TableRow {
  RowAt<State, Event> at;
  Step reach;
  Step inject;
  Want want;
  Step also = nullptr;  // row-specific checks, after the common ones
};

template <typename State, typename Event, typename Step, typename Want>
std::ostream& operator<<(std::ostream& out, const TableRow<State, Event, Step, Want>& row) {
  return out << to_string(row.at.state) << " + " << to_string(row.at.event) << " "
             << row.at.variant;
}

// The step a row takes, by the names of its state and event (DriverCore::Step).
struct StepName {
  std::string from;
  std::string event;
};
template <typename State, typename Event>
StepName step_of(State state, Event event) {
  return {to_string(state), to_string(event)};
}

// What every row test of either driver does: bring the rig to the row's state, raise its
// input, find the step the driver took among its steps (`step`; none: the input takes none),
// then check what it did from outside (the rig's check of `want`, and the row's own `also`).
template <typename Rig, typename Step, typename Want>
void drive_row(Rig& r, Step reach, Step inject, const std::optional<StepName>& step,
               const Want& want, Step also) {
  reach(r);
  ASSERT_FALSE(::testing::Test::HasFatalFailure())
      << "could not reach the state of " << (step ? step->from + " + " + step->event : "a row");
  const std::size_t sent = r.h.transport.sent.size();
  const std::size_t stepped = r.steps().size();
  inject(r);
  if (step) {
    EXPECT_TRUE(took(r.steps(), stepped, step->from, step->event))
        << steps_since(r.steps(), stepped);
  }
  r.check(want, sent);
  if (also != nullptr) also(r);
}

// The test's name: State_Event, and _variant when there is one.
template <typename Row>
std::string row_name(const ::testing::TestParamInfo<Row>& info) {
  const Row& r = info.param;
  return std::string(to_string(r.at.state)) + "_" + to_string(r.at.event) +
         (*r.at.variant == '\0' ? std::string() : "_" + std::string(r.at.variant));
}

}  // namespace rdmax::test
