#include "protocol/paths.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace rdmax::proto {
void PrintTo(const PathProblem& p, std::ostream* os) {
  *os << to_string(p.error) << " at component " << p.component_index << " ("
      << to_string(p.component_error) << ")";
}
}  // namespace rdmax::proto

namespace {

using rdmax::proto::check_relative_path;
using rdmax::proto::describe;
using rdmax::proto::kMaxPathBytes;
using rdmax::proto::kMaxPathComponents;
using rdmax::proto::NameError;
using rdmax::proto::path_components;
using rdmax::proto::PathError;
using rdmax::proto::PathProblem;

// The problem with `path`, asserted to exist.
PathProblem problem_of(std::string_view path) {
  const auto problem = check_relative_path(path);
  EXPECT_TRUE(problem.has_value()) << path;
  return problem.value_or(PathProblem{});
}

void expect_bad_component(std::string_view path, std::size_t index, NameError error) {
  const PathProblem p = problem_of(path);
  EXPECT_EQ(p.error, PathError::BadComponent) << path;
  EXPECT_EQ(p.component_index, index) << path;
  EXPECT_EQ(p.component_error, error) << path;
}

TEST(RelativePath, AcceptsPlainPaths) {
  for (const char* path : {"x", "a/b", "a/b/c.txt", "dir with space/Ünïcödé/日本.txt",
                           ".hidden/..x", ".hidden/x", "...", "a..b/...", "-dash/ x "}) {
    EXPECT_EQ(check_relative_path(path), std::nullopt) << path;
  }
}

// Control bytes but NUL are legal in a session's names (PROTOCOL.md 7.5): a dataset holding
// "new\nline" arrives whole.
TEST(RelativePath, AcceptsControlBytesButNul) {
  EXPECT_EQ(check_relative_path("a/new\nline"), std::nullopt);
  EXPECT_EQ(check_relative_path("tab\there/del\x7f/esc\x1b[2J"), std::nullopt);
  EXPECT_EQ(path_components("d\n/f\r"), (std::vector<std::string_view>{"d\n", "f\r"}));
}

TEST(RelativePath, OneComponentIsAFileName) {
  EXPECT_EQ(check_relative_path("file.bin"), std::nullopt);
  expect_bad_component("..", 0, NameError::DotOrDotDot);
}

TEST(RelativePath, RejectsEmpty) {
  EXPECT_EQ(problem_of("").error, PathError::Empty);
}

TEST(RelativePath, RejectsAbsolute) {
  EXPECT_EQ(problem_of("/abs").error, PathError::Absolute);
  EXPECT_EQ(problem_of("/").error, PathError::Absolute);
}

TEST(RelativePath, RejectsDotAndDotDotAnywhere) {
  expect_bad_component("../x", 0, NameError::DotOrDotDot);
  expect_bad_component("a/../../b", 1, NameError::DotOrDotDot);
  expect_bad_component("a/./b", 1, NameError::DotOrDotDot);
  expect_bad_component("a/b/..", 2, NameError::DotOrDotDot);
  expect_bad_component("./a", 0, NameError::DotOrDotDot);
}

TEST(RelativePath, RejectsEmptyComponents) {
  for (const auto& [path, index] : std::vector<std::pair<const char*, std::size_t>>{
           {"a//b", 1}, {"a/", 1}, {"a/b/", 2}, {"a/b//", 2}}) {
    const PathProblem p = problem_of(path);
    EXPECT_EQ(p.error, PathError::EmptyComponent) << path;
    EXPECT_EQ(p.component_index, index) << path;
  }
}

TEST(RelativePath, RejectsBackslashNulAndInvalidUtf8InAnyComponent) {
  expect_bad_component("a\\b/c", 0, NameError::PathSeparator);
  expect_bad_component("a/..\\b", 1, NameError::PathSeparator);
  expect_bad_component(std::string_view("a/b\0c/d", 7), 1, NameError::ControlChar);
  expect_bad_component("a/\xff/c", 1, NameError::InvalidUtf8);
  expect_bad_component("ok/bad\xC3(/ok", 1, NameError::InvalidUtf8);
  expect_bad_component("ok/\xED\xA0\x80/ok", 1, NameError::InvalidUtf8);  // a surrogate
}

TEST(RelativePath, ComponentOver255BytesIsRefused) {
  EXPECT_EQ(check_relative_path("a/" + std::string(255, 'x')), std::nullopt);
  expect_bad_component("a/" + std::string(256, 'x'), 1, NameError::TooLong);
}

TEST(RelativePath, LimitIs2048Bytes) {
  // Components of 200 bytes (each under NAME_MAX), so only the total length is at fault.
  auto path_of_length = [](std::size_t length) {
    std::string path;
    for (std::size_t i = 0; i < length; ++i) path += i % 201 == 200 ? '/' : 'x';
    return path;
  };
  ASSERT_EQ(path_of_length(kMaxPathBytes).size(), kMaxPathBytes);
  EXPECT_EQ(check_relative_path(path_of_length(kMaxPathBytes)), std::nullopt);
  EXPECT_EQ(problem_of(path_of_length(kMaxPathBytes + 1)).error, PathError::TooLong);
}

TEST(RelativePath, LimitIs256Components) {
  std::string path = "d";
  for (std::size_t i = 1; i < kMaxPathComponents; ++i) path += "/d";
  EXPECT_EQ(check_relative_path(path), std::nullopt);
  EXPECT_EQ(path_components(path).size(), kMaxPathComponents);
  const PathProblem p = problem_of(path + "/d");
  EXPECT_EQ(p.error, PathError::TooDeep);
  EXPECT_EQ(p.component_index, kMaxPathComponents);
}

TEST(RelativePath, ComponentsSplitOnSlash) {
  EXPECT_EQ(path_components("x"), std::vector<std::string_view>{"x"});
  EXPECT_EQ(path_components("dir with space/Ünïcödé/日本.txt"),
            (std::vector<std::string_view>{"dir with space", "Ünïcödé", "日本.txt"}));
}

TEST(RelativePath, DescriptionsNameTheComponentWithoutQuotingIt) {
  EXPECT_EQ(describe(problem_of("a/../b")), "component 2 is \".\" or \"..\"");
  EXPECT_EQ(describe(problem_of(std::string("a/b\0", 4))),
            "component 2 contains a control character");
  EXPECT_EQ(describe(problem_of("a\\b")), "component 1 contains a backslash");
  EXPECT_EQ(describe(problem_of("a//b")), "component 2 is empty (\"//\" or a trailing '/')");
  EXPECT_EQ(describe(problem_of("/a")), "the path is absolute (starts with '/')");
  EXPECT_EQ(describe(problem_of("")), "the path is empty");
  EXPECT_EQ(describe(problem_of(std::string(kMaxPathBytes + 1, 'a'))),
            "the path is longer than 2048 bytes");
  EXPECT_STREQ(to_string(PathError::TooDeep), "TooDeep");
}

}  // namespace
