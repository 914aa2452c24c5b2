// Copyright 2026 The rfrpc Authors.
//
// main() for replaying a fuzzer's corpus without libFuzzer: runs
// LLVMFuzzerTestOneInput on every file named on the command line or found
// (recursively) in a directory named there. Bazel builds each fuzzer with this
// as a cc_test over its seed corpus and its regression inputs, so what a
// fuzzer once found stays fixed under every config (asan, ubsan, tsan).
// A crash, abort or sanitizer report fails the test; otherwise it prints
// "N passed, 0 failed".

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc,
                                                         char*** argv);

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p(argv[i]);
    if (!std::filesystem::exists(p)) continue;  // E.g. no regressions yet.
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) files.push_back(e.path().string());
      }
    } else {
      files.push_back(p.string());
    }
  }
  if (files.empty()) {
    fprintf(stderr, "replay: no inputs found\n");
    return 1;
  }
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    fprintf(stderr, "replay: %s (%zu bytes)\n", f.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()),
                           bytes.size());
  }
  printf("%zu passed, 0 failed\n", files.size());
  return 0;
}
