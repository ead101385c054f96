// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace rookery::bench {

/// Command line shared by every benchmark: --quick, --json FILE.
struct BenchOptions
{
    bool quick = false;
    std::string jsonPath;
};

/// Parses the shared options plus any the benchmark adds; exits on --help or bad input.
/// `more` adds the benchmark's own options to the parser.
BenchOptions parseBenchOptions(int argc, char **argv, const std::string &name, const std::string &summary,
                               const std::function<void(CLI::App &)> &more = {});

/// Collects a benchmark's figures and writes them as one flat JSON object. Call
/// setResult() for the main figure: it records baseline, measured and ratio.
///
/// Thread safety: one thread.
class BenchReport
{
public:
    explicit BenchReport(std::string name, bool quick);
    /// The main figure: `ratio` = measured / baseline (or under `ratioKey`).
    void setResult(double baseline, double measured, const std::string &unit, const std::string &ratioKey = "ratio");
    void add(const std::string &key, double value);
    void add(const std::string &key, const std::string &value);
    /// Prints a summary line per figure and writes the JSON file if a path was given.
    void finish(const std::string &jsonPath) const;

private:
    std::string m_name;
    std::vector<std::pair<std::string, std::string>> m_fields; // key, JSON-encoded value
    void put(const std::string &key, std::string encoded);
};

} // namespace rookery::bench
