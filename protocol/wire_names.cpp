// The names of the wire format's codes, for logs and diagnostics (protocol/wire.hpp).

#include "protocol/wire.hpp"

namespace rdmax::proto {

const char* to_string(MessageType type) {
  switch (type) {
    case MessageType::Hello:
      return "Hello";
    case MessageType::Accept:
      return "Accept";
    case MessageType::Chunk:
      return "Chunk";
    case MessageType::Credit:
      return "Credit";
    case MessageType::Done:
      return "Done";
    case MessageType::Verdict:
      return "Verdict";
    case MessageType::Id:
      return "Id";
    case MessageType::Secret:
      return "Secret";
    case MessageType::Denied:
      return "Denied";
    case MessageType::Reject:
      return "Reject";
    case MessageType::Bye:
      return "Bye";
    case MessageType::Error:
      return "Error";
    case MessageType::Working:
      return "Working";
    case MessageType::Open:
      return "Open";
    case MessageType::Offer:
      return "Offer";
    case MessageType::Take:
      return "Take";
    case MessageType::Refuse:
      return "Refuse";
    case MessageType::FileChunk:
      return "FileChunk";
    case MessageType::FileDone:
      return "FileDone";
    case MessageType::FileVerdict:
      return "FileVerdict";
    case MessageType::Resume:
      return "Resume";
    case MessageType::Have:
      return "Have";
    case MessageType::Challenge:
      return "Challenge";
    case MessageType::Proof:
      return "Proof";
    case MessageType::Holds:
      return "Holds";
    case MessageType::FileAbort:
      return "FileAbort";
    case MessageType::Continue:
      return "Continue";
  }
  return "UnknownMessageType";
}

const char* to_string(VerdictCode code) {
  switch (code) {
    case VerdictCode::Good:
      return "Good";
    case VerdictCode::HashMismatch:
      return "HashMismatch";
    case VerdictCode::StorageError:
      return "StorageError";
    case VerdictCode::Abandoned:
      return "Abandoned";
    case VerdictCode::SizeMismatch:
      return "SizeMismatch";
  }
  return "UnknownVerdictCode";
}

const char* to_string(RejectReason reason) {
  switch (reason) {
    case RejectReason::BadName:
      return "BadName";
    case RejectReason::Exists:
      return "Exists";
    case RejectReason::TooLarge:
      return "TooLarge";
    case RejectReason::NoSpace:
      return "NoSpace";
    case RejectReason::Busy:
      return "Busy";
    case RejectReason::UnsupportedVersion:
      return "UnsupportedVersion";
    case RejectReason::Internal:
      return "Internal";
    case RejectReason::NoMemory:
      return "NoMemory";
    case RejectReason::AuthRequired:
      return "AuthRequired";
    case RejectReason::AuthFailed:
      return "AuthFailed";
  }
  return "UnknownRejectReason";
}

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::ProtocolViolation:
      return "ProtocolViolation";
    case ErrorCode::Timeout:
      return "Timeout";
    case ErrorCode::Internal:
      return "Internal";
    case ErrorCode::TooManyAttempts:
      return "TooManyAttempts";
    case ErrorCode::ShuttingDown:
      return "ShuttingDown";
    case ErrorCode::AuthFailed:
      return "AuthFailed";
  }
  return "UnknownErrorCode";
}

const char* to_string(DecodeError error) {
  switch (error) {
    case DecodeError::Short:
      return "Short";
    case DecodeError::BadMagic:
      return "BadMagic";
    case DecodeError::BadVersion:
      return "BadVersion";
    case DecodeError::BadType:
      return "BadType";
    case DecodeError::LengthMismatch:
      return "LengthMismatch";
    case DecodeError::TooLarge:
      return "TooLarge";
    case DecodeError::BadReserved:
      return "BadReserved";
    case DecodeError::BadField:
      return "BadField";
  }
  return "UnknownDecodeError";
}

const char* to_string(DigestAlgorithm algorithm) {
  switch (algorithm) {
    case DigestAlgorithm::WholeFileSha256:
      return "sha256";
    case DigestAlgorithm::FsVeritySha256:
      return "fsverity-sha256";
    case DigestAlgorithm::Blake3:
      return "blake3";
  }
  return "unknown";
}

const char* to_string(WorkPhase phase) {
  switch (phase) {
    case WorkPhase::Preparing:
      return "Preparing";
    case WorkPhase::Storing:
      return "Storing";
    case WorkPhase::Committing:
      return "Committing";
  }
  return "UnknownWorkPhase";
}

const char* to_string(EntryKind kind) {
  switch (kind) {
    case EntryKind::File:
      return "file";
    case EntryKind::Directory:
      return "directory";
  }
  return "unknown";
}

const char* to_string(AbortReason reason) {
  switch (reason) {
    case AbortReason::Changed:
      return "Changed";
    case AbortReason::Unreadable:
      return "Unreadable";
  }
  return "UnknownAbortReason";
}

}  // namespace rdmax::proto
