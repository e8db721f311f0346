// rdma-recv --from --files-from (issue 52): what a list's names are within the server's
// export, and what is wrong with a list before anything connects.

#include "receiver/fetch_list.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/wire.hpp"

namespace rdmax::receiver {
namespace {

std::vector<std::string> paths_of(std::string_view text, bool nul = false) {
  return fetch_list_paths(split_file_list(text, nul));
}

std::string refusal(std::string_view text) {
  try {
    (void)paths_of(text);
  } catch (const FileListError& e) {
    return e.what();
  }
  return "(not refused)";
}

TEST(FetchList, NamesAreTheirComponentsWithinTheExport) {
  EXPECT_EQ(paths_of("./data/a.bin\ndata//sub/\n.\n./\ntop.txt\r\n"),
            (std::vector<std::string>{"data/a.bin", "data/sub", "top.txt"}));
  // -0: a name may hold a newline.
  EXPECT_EQ(paths_of(std::string_view("odd\nname\0data\0", 15), true),
            (std::vector<std::string>{"odd\nname", "data"}));
}

TEST(FetchList, WhatNoWantMayCarryIsRefusedNamingItsRecord) {
  EXPECT_NE(refusal("a\n/etc/passwd\n").find("entry 2 '/etc/passwd' is absolute"),
            std::string::npos);
  EXPECT_NE(refusal("a/../../b\n").find("entry 1 'a/../../b' holds a \"..\" component"),
            std::string::npos);
  EXPECT_NE(refusal(std::string(proto::kMaxPathBytes + 1, 'p')).find("is longer than 2048 bytes"),
            std::string::npos);
  EXPECT_NE(refusal(".\n./\n").find("names nothing to fetch"), std::string::npos);
  EXPECT_NE(refusal("").find("names nothing to fetch"), std::string::npos);
  EXPECT_EQ(paths_of(std::string(proto::kMaxPathBytes, 'p')).size(), 1U);
}

TEST(FetchList, AListLargerThanOneRequestIsRefused) {
  std::string text;
  for (std::uint32_t i = 0; i <= proto::kMaxWants; ++i) text += "f\n";
  EXPECT_NE(refusal(text).find("more than 1000000 names"), std::string::npos);
}

}  // namespace
}  // namespace rdmax::receiver
