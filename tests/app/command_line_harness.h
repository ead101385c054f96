// SPDX-License-Identifier: GPL-3.0-or-later
// Runs a program's parse function on an argv given as words, the way main() would.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

#include "engine/common/error.h"

namespace rookery::test {

/// What one parse did: whether the program would run, what it printed to stdout, and
/// the rookery::Error message it refused the command line with (empty when none).
struct ParseResult
{
    bool run = false;
    std::string printed;
    std::string error;
};

/// Calls `parse(argc, argv)` with `program` followed by `args`, capturing stdout.
inline ParseResult parseWords(const std::string &program, std::vector<std::string> args,
                              const std::function<bool(int, char **)> &parse)
{
    args.insert(args.begin(), program);
    std::vector<char *> argv;
    for (auto &a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);

    ParseResult result;
    std::fflush(stdout);
    FILE *capture = std::tmpfile();
    const int savedStdout = dup(STDOUT_FILENO);
    dup2(fileno(capture), STDOUT_FILENO);
    try {
        result.run = parse(int(args.size()), argv.data());
    } catch (const Error &e) {
        result.error = e.what();
    }
    std::fflush(stdout);
    dup2(savedStdout, STDOUT_FILENO);
    close(savedStdout);
    std::rewind(capture);
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, capture)) > 0;)
        result.printed.append(buffer, n);
    std::fclose(capture);
    return result;
}

} // namespace rookery::test
