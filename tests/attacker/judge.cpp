#include "judge.hpp"

#include <algorithm>
#include <cstdio>

namespace rdmax::attacker {

Reaction observe(Peer& p, Clock::time_point since, const Options& o) {
  const auto within = std::chrono::seconds(o.receiver_timeout_s + o.slack_s + 1);
  (void)p.wait_disconnected(
      std::chrono::duration_cast<std::chrono::milliseconds>(within - (Clock::now() - since)));
  // DISCONNECTED comes through rdma_cm and the answer through the completion queue: two
  // paths, and under emulation the answer's completion can be seen a moment after the
  // disconnect. A short grace drains it before anything is judged missing.
  Reaction r;
  r.messages = p.take_messages();
  if (p.disconnected() && r.messages.empty()) {
    p.poll_for(std::chrono::milliseconds(500), [&] { return p.has_messages(); });
    r.messages = p.take_messages();
  }
  r.disconnected = p.disconnected();
  r.seconds = seconds_between(since, r.disconnected ? p.disconnected_at() : Clock::now());
  if (!r.messages.empty()) r.answered_seconds = seconds_between(since, p.last_message_at());
  if (p.qp_failed()) r.our_qp = p.first_error();
  return r;
}

std::string format_seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fs", s);
  return text;
}

std::string describe(const Reaction& r) {
  std::string text;
  for (const auto& m : r.messages) text += (text.empty() ? "" : ", ") + Peer::describe(m);
  if (text.empty()) text = "no message";
  if (r.answered_seconds >= 0) text += " after " + format_seconds(r.answered_seconds);
  text += r.disconnected ? ", disconnected after " + format_seconds(r.seconds)
                         : ", NOT disconnected within " + format_seconds(r.seconds);
  if (!r.our_qp.empty()) text += " (our queue pair: " + r.our_qp + ")";
  return text;
}

const proto::Error* find_error(const Reaction& r) {
  for (const auto& m : r.messages)
    if (auto* e = std::get_if<proto::Error>(&m)) return e;
  return nullptr;
}

namespace {

// Prompt: the receiver answered (Error, Reject) before its --timeout could have fired, and
// the disconnect followed within --timeout + --slack. The disconnect itself may lag its
// answer: it waits for the answer's SEND to complete and then for rdma_cm's DREQ/DREP,
// and under emulation a lost CM packet is retried only after seconds (seen once: Error at
// once, disconnect after 3.2 s, the receiver cleaning up at its timeout). Without an
// answer the disconnect itself must come before the timeout.
std::string judge_promptness(const Options& o, const Reaction& r) {
  const double timeout = o.receiver_timeout_s;
  if (r.answered_seconds >= 0) {
    if (r.answered_seconds > timeout) return "the answer took longer than the receiver's --timeout";
    if (r.seconds > timeout + o.slack_s)
      return "the disconnect came later than --timeout + " + std::to_string(o.slack_s) + "s";
    return "";
  }
  if (r.seconds > timeout) return "the reaction took longer than the receiver's --timeout";
  return "";
}

// A Reject with `reason` (the last Reject counts), then a prompt disconnect.
std::string judge_reject(const Options& o, const Reaction& r, proto::RejectReason reason,
                         const char* name) {
  bool found = false;
  for (const auto& m : r.messages)
    if (auto* j = std::get_if<proto::Reject>(&m)) found = j->reason == reason;
  if (!found) return std::string("no Reject(") + name + ")";
  return judge_promptness(o, r);
}

}  // namespace

// Empty when the reaction is the expected one; otherwise why not.
std::string judge(const Options& o, const Reaction& r, Expect expect) {
  const double timeout = o.receiver_timeout_s;
  const proto::Error* error = find_error(r);
  for (const auto& m : r.messages) {
    const bool allowed = std::holds_alternative<proto::Error>(m) ||
                         (expect != Expect::Violation && expect != Expect::Timeout &&
                          expect != Expect::Disconnect && std::holds_alternative<proto::Reject>(m));
    if (!allowed) return "unexpected " + Peer::describe(m);
  }
  if (!r.disconnected) return "the receiver did not disconnect";
  switch (expect) {
    case Expect::Violation:
      if (!error) return "no Error(ProtocolViolation) before the disconnect";
      [[fallthrough]];
    case Expect::Disconnect:
      if (error && error->code != proto::ErrorCode::ProtocolViolation)
        return std::string("Error(") + to_string(error->code) + "), expected ProtocolViolation";
      return judge_promptness(o, r);
    case Expect::Timeout:
      if (!error || error->code != proto::ErrorCode::Timeout)
        return "no Error(Timeout) before the disconnect";
      if (r.seconds < std::max(0.0, timeout - 1))
        return "dropped before the receiver's --timeout (" + format_seconds(timeout) + ")";
      if (r.seconds > timeout + o.slack_s)
        return "dropped later than --timeout + " + std::to_string(o.slack_s) + "s";
      return "";
    case Expect::VersionAnswer:
      // docs/PROTOCOL.md 2 and 4.5: a foreign version gets Reject(UnsupportedVersion).
      return judge_reject(o, r, proto::RejectReason::UnsupportedVersion, "UnsupportedVersion");
    case Expect::BadName:
      return judge_reject(o, r, proto::RejectReason::BadName, "BadName");
    case Expect::AuthRequired:
      return judge_reject(o, r, proto::RejectReason::AuthRequired, "AuthRequired");
    case Expect::AuthFailed:
      return judge_reject(o, r, proto::RejectReason::AuthFailed, "AuthFailed");
  }
  return "";
}

}  // namespace rdmax::attacker
