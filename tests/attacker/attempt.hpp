#pragma once
// One attempt of a hostile command on a connection of its own (hostile.cpp,
// hostile_fetch.cpp): connect, act, observe the peer's reaction, judge it, print its line.

#include <cstdint>
#include <functional>
#include <string>

#include "judge.hpp"
#include "peer.hpp"

namespace rdmax::attacker {

// Sends what an attempt sends on its connection; returns the moment from which the peer's
// reaction is timed.
using AttemptAct = std::function<Clock::time_point(Peer&)>;

// Which of the peer's messages are judged.
enum class Judged {
  Everything,
  // Only its Errors and Rejects: the peer may have begun its session (an Open, Offers)
  // before it found the fault.
  RefusalsOnly,
};

// Empty when --dir holds nothing named after this command (the receiver gets 2 s to remove
// it); otherwise what is left there. Empty without --dir.
std::string dir_check(const Options& o);

// Prints the attempt's line ("hostile COMMAND/ATTEMPT: ok|WRONG: ..."); with --dir, also
// checks that nothing named after this command is left there. True when the peer reacted as
// it must.
bool report(const Options& o, const std::string& attempt, const Reaction& r, Expect expect);

// Connects (a queue pair with `raw_slots` receive slots), acts, observes, judges, reports.
bool attempt_on_fresh_connection(const Options& o, const std::string& attempt, Expect expect,
                                 const AttemptAct& act, std::uint32_t raw_slots = 8,
                                 Judged judged = Judged::Everything);

}  // namespace rdmax::attacker
