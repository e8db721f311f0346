// rdma-send's options for many machines (issue 24: --shard, --files-from, --base, -0 and
// --json-lines) and the digest's order (issue 25), parsed into SenderOptions or refused as
// usage errors (status 2) that say why.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "sender/exit_codes.hpp"
#include "sender/options.hpp"

namespace rdmax::sender {
namespace {

struct Parsed {
  std::optional<SenderOptions> options;
  int status = -1;
  std::string err;
};

Parsed send(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), "rdma-send");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  const EnvironmentLookup lookup = [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  ::testing::internal::CaptureStderr();
  auto result = parse_sender_options_in(static_cast<int>(argv.size()), argv.data(), lookup);
  Parsed p;
  p.err = ::testing::internal::GetCapturedStderr();
  if (const int* status = std::get_if<int>(&result))
    p.status = *status;
  else
    p.options = std::get<SenderOptions>(std::move(result));
  return p;
}

void expect_usage(const Parsed& p, const std::string& words) {
  EXPECT_EQ(p.status, kExitUsage) << p.err;
  EXPECT_EQ(p.err.rfind("rdma-send: ", 0), 0u) << p.err;
  EXPECT_NE(p.err.find(words), std::string::npos) << p.err;
}

// --key-file, else RDMAX_KEY_FILE (docs/PROTOCOL.md 7.8); an empty variable is no file.
TEST(KeyFileOption, TheFlagWinsOverTheEnvironment) {
  EXPECT_EQ(send({"-H", "h", "--key-file", "/k/flag", "f"}, {{"RDMAX_KEY_FILE", "/k/env"}})
                .options->key_file,
            "/k/flag");
  EXPECT_EQ(send({"-H", "h", "f"}, {{"RDMAX_KEY_FILE", "/k/env"}}).options->key_file, "/k/env");
  EXPECT_FALSE(send({"-H", "h", "f"}, {{"RDMAX_KEY_FILE", ""}}).options->key_file);
  EXPECT_FALSE(send({"-H", "h", "f"}).options->key_file);
}

TEST(ListOptions, FilesFromTakesTheListBaseAndSeparator) {
  const Parsed p = send({"-H", "h", "--files-from", "-", "-0", "--base", "/data", "--json-lines"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(*p.options->files_from, "-");
  EXPECT_TRUE(p.options->from0);
  EXPECT_EQ(p.options->base, "/data");
  EXPECT_TRUE(p.options->json_lines);
  EXPECT_TRUE(p.options->files.empty());
  const Parsed defaults = send({"-H", "h", "--files-from", "list"});
  ASSERT_TRUE(defaults.options) << defaults.err;
  EXPECT_EQ(defaults.options->base, ".");
  EXPECT_FALSE(defaults.options->from0);
}

TEST(ListOptions, FilesFromDoesNotMixWithPathsRecursionOrName) {
  expect_usage(send({"-H", "h", "--files-from", "list", "file"}), "give no PATH beside it");
  expect_usage(send({"-H", "h", "--files-from", "list", "-r"}), "-r does not apply");
  expect_usage(send({"-H", "h", "--files-from", "list", "--name", "x"}), "--name renames");
  expect_usage(send({"--checksum", "--files-from", "list"}), "--checksum takes PATHs");
  expect_usage(send({"-H", "h", "--files-from", ""}), "empty file name");
}

TEST(ListOptions, BaseAndNulNeedAList) {
  expect_usage(send({"-H", "h", "--base", "/data", "f"}), "--base: it applies to --files-from");
  expect_usage(send({"-H", "h", "-0", "f"}), "-0 (--from0): it applies to --files-from");
}

TEST(ListOptions, JsonAndJsonLinesBothWantStdout) {
  const Parsed p = send({"-H", "h", "--json", "--json-lines", "f"});
  EXPECT_EQ(p.status, kExitUsage);
  EXPECT_NE(p.err.find("--json"), std::string::npos) << p.err;
}

// Issue 25: the digest goes at the end unless --digest-first asks for the order of version 1.
TEST(DigestOrderOption, AtTheEndByDefaultFirstWhenAsked) {
  const Parsed plain = send({"-H", "h", "f"});
  ASSERT_TRUE(plain.options) << plain.err;
  EXPECT_TRUE(plain.options->digest_at_end);
  const Parsed first = send({"-H", "h", "--digest-first", "f"});
  ASSERT_TRUE(first.options) << first.err;
  EXPECT_FALSE(first.options->digest_at_end);
  const Parsed at_end = send({"-H", "h", "--digest-at-end", "f"});
  ASSERT_TRUE(at_end.options) << at_end.err;
  EXPECT_TRUE(at_end.options->digest_at_end);
  const Parsed both = send({"-H", "h", "--digest-first", "--digest-at-end", "f"});
  EXPECT_EQ(both.status, kExitUsage);
  EXPECT_NE(both.err.find("--digest-first"), std::string::npos) << both.err;
}

TEST(ListOptions, ShardDefaultsToTheWholeTree) {
  const Parsed p = send({"-H", "h", "f"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(p.options->shard, (ShardSpec{0, 1}));
}

TEST(ListOptions, ShardFromTheCommandLineOrTheLauncher) {
  const Parsed given = send({"-H", "h", "--shard", "2/5", "-r", "d"});
  ASSERT_TRUE(given.options) << given.err;
  EXPECT_EQ(given.options->shard, (ShardSpec{2, 5}));
  const Parsed slurm = send({"-H", "h", "--shard", "auto", "-r", "d"},
                            {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}});
  ASSERT_TRUE(slurm.options) << slurm.err;
  EXPECT_EQ(slurm.options->shard, (ShardSpec{3, 4}));
  const Parsed job = send({"-H", "h", "--shard", "auto/3", "f"}, {{"JOB_COMPLETION_INDEX", "1"}});
  ASSERT_TRUE(job.options) << job.err;
  EXPECT_EQ(job.options->shard, (ShardSpec{1, 3}));
}

TEST(ListOptions, ABadShardIsAUsageError) {
  expect_usage(send({"-H", "h", "--shard", "4/4", "f"}), "--shard: 4/4: there is no shard 4 of 4");
  expect_usage(send({"-H", "h", "--shard", "1/0", "f"}), "N is 0");
  expect_usage(send({"-H", "h", "--shard", "auto", "f"}), "looked for SLURM_PROCID");
  expect_usage(send({"-H", "h", "--shard", "auto", "f"}, {{"PMI_RANK", "1"}}), "PMI_SIZE is not");
}

}  // namespace
}  // namespace rdmax::sender
