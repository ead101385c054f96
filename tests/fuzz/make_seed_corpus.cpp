// SPDX-License-Identifier: GPL-3.0-or-later
// Writes one encoded frame of every sample message (plain, fp16 and bf16) into the
// directory given: the seed corpus of fuzz_wire_decoder (tests/fuzz/corpus/wire_decoder).
#include <cstdio>
#include <fstream>
#include <string>

#include "engine/net/wire_codec.h"
#include "tests/engine/net/wire_samples.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_seed_corpus DIR\n");
        return 2;
    }
    using rookery::net::Compression;
    int n = 0;
    for (const auto c : {Compression::None, Compression::Fp16, Compression::Bf16})
        for (const auto &m : rookery::test::sampleMessages()) {
            if (c != Compression::None && !std::holds_alternative<rookery::net::Activations>(m) &&
                !std::holds_alternative<rookery::net::Gradients>(m))
                continue;
            const auto bytes = rookery::net::encodeFrame(m, c).flatten();
            const std::string name = std::string(argv[1]) + "/" + std::to_string(n++) + "-" +
                                     std::string(rookery::net::messageName(m)) + "-" +
                                     std::string(rookery::net::compressionName(c)) + ".bin";
            std::ofstream(name, std::ios::binary)
                .write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
        }
    std::printf("wrote %d frames\n", n);
    return 0;
}
