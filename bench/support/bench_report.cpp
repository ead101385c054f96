// SPDX-License-Identifier: GPL-3.0-or-later
#include "bench/support/bench_report.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/common/command_line.h"
#include "engine/common/error.h"

namespace rookery::bench {

BenchOptions parseBenchOptions(int argc, char **argv, const std::string &name, const std::string &summary,
                               const std::function<void(CLI::App &)> &more)
{
    BenchOptions o;
    CLI::App p(summary, name);
    cli::configure(p);
    p.add_flag("--quick", o.quick, "a short run (under a minute) for CI");
    p.add_option("--json", o.jsonPath, "write the figures as JSON to FILE")->type_name("FILE");
    if (more)
        more(p);
    try {
        if (cli::parse(p, argc, argv) != cli::Outcome::Run)
            std::exit(0);
    } catch (const Error &e) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
        std::exit(2);
    }
    return o;
}

BenchReport::BenchReport(std::string name, bool quick)
    : m_name(std::move(name))
{
    put("benchmark", nlohmann::json(m_name).dump());
    put("quick", nlohmann::json(quick).dump());
}

void BenchReport::put(const std::string &key, std::string encoded)
{
    for (auto &f : m_fields)
        if (f.first == key) {
            f.second = std::move(encoded);
            return;
        }
    m_fields.emplace_back(key, std::move(encoded));
}

void BenchReport::setResult(double baseline, double measured, const std::string &unit, const std::string &ratioKey)
{
    add("baseline", baseline);
    add("measured", measured);
    add("unit", unit);
    add(ratioKey, baseline != 0 ? measured / baseline : 0.0);
}

void BenchReport::add(const std::string &key, double value) { put(key, nlohmann::json(value).dump()); }

void BenchReport::add(const std::string &key, const std::string &value) { put(key, nlohmann::json(value).dump()); }

void BenchReport::finish(const std::string &jsonPath) const
{
    nlohmann::ordered_json j;
    for (const auto &[k, v] : m_fields)
        j[k] = nlohmann::json::parse(v);
    std::printf("%s results:\n", m_name.c_str());
    for (const auto &[k, v] : m_fields)
        std::printf("  %-28s %s\n", k.c_str(), v.c_str());
    if (!jsonPath.empty()) {
        std::ofstream out(jsonPath);
        out << j.dump(2) << '\n';
        if (!out)
            std::fprintf(stderr, "%s: cannot write %s\n", m_name.c_str(), jsonPath.c_str());
        else
            std::printf("  wrote %s\n", jsonPath.c_str());
    }
}

} // namespace rookery::bench
