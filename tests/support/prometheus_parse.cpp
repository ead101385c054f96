// SPDX-License-Identifier: GPL-3.0-or-later
#include "tests/support/prometheus_parse.h"

#include <cmath>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

namespace rookery::test {
namespace {

const std::regex kMetricName("[a-zA-Z_:][a-zA-Z0-9_:]*");
const std::regex kLabelName("[a-zA-Z_][a-zA-Z0-9_]*");

struct Failure
{
    std::string what;
};

bool parseValue(const std::string &text, double &out)
{
    if (text == "NaN" || text == "+Inf" || text == "-Inf" || text == "Inf") {
        out = text == "NaN" ? std::nan("") : (text[0] == '-' ? -HUGE_VAL : HUGE_VAL);
        return true;
    }
    if (text.empty() || text.find_first_not_of("0123456789+-.eE") != std::string::npos)
        return false;
    char *end = nullptr;
    out = std::strtod(text.c_str(), &end);
    return end == text.c_str() + text.size();
}

std::string unescape(const std::string &text, bool quotes)
{
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\\') {
            out += text[i];
            continue;
        }
        if (++i == text.size())
            throw Failure{"a backslash ends the text"};
        if (text[i] == '\\')
            out += '\\';
        else if (text[i] == 'n')
            out += '\n';
        else if (text[i] == '"' && quotes)
            out += '"';
        else
            throw Failure{std::string("unknown escape \\") + text[i]};
    }
    return out;
}

// name{a="x",b="y"} value [timestamp]
PrometheusSample parseSample(const std::string &line)
{
    PrometheusSample s;
    size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (!std::regex_match(s.name, kMetricName))
        throw Failure{"'" + s.name + "' is not a metric name"};
    if (i != std::string::npos && line[i] == '{') {
        ++i;
        while (i < line.size() && line[i] != '}') {
            const size_t eq = line.find('=', i);
            if (eq == std::string::npos)
                throw Failure{"a label without '='"};
            const std::string label = line.substr(i, eq - i);
            if (!std::regex_match(label, kLabelName) || label.starts_with("__"))
                throw Failure{"'" + label + "' is not a label name"};
            if (eq + 1 >= line.size() || line[eq + 1] != '"')
                throw Failure{"label " + label + ": the value is not quoted"};
            size_t j = eq + 2;
            std::string raw;
            for (; j < line.size() && line[j] != '"'; ++j) {
                if (line[j] == '\\' && j + 1 < line.size())
                    raw += line[j++];
                raw += line[j];
            }
            if (j >= line.size())
                throw Failure{"label " + label + ": the quote does not close"};
            if (!s.labels.emplace(label, unescape(raw, true)).second)
                throw Failure{"label " + label + " given twice"};
            i = j + 1;
            if (i < line.size() && line[i] == ',')
                ++i;
            else if (i >= line.size() || line[i] != '}')
                throw Failure{"labels must be separated by ','"};
        }
        if (i >= line.size())
            throw Failure{"the label set does not close"};
        ++i;
    }
    if (i >= line.size() || line[i] != ' ')
        throw Failure{"a space must separate the value"};
    std::istringstream rest(line.substr(i + 1));
    std::string value, timestamp, extra;
    rest >> value >> timestamp >> extra;
    if (!parseValue(value, s.value))
        throw Failure{"'" + value + "' is not a number"};
    if (!extra.empty() || (!timestamp.empty() && timestamp.find_first_not_of("-0123456789") != std::string::npos))
        throw Failure{"only a value and an integer timestamp may follow the labels"};
    return s;
}

} // namespace

std::optional<double> PrometheusExposition::value(const std::string &name,
                                                  const std::map<std::string, std::string> &labels) const
{
    for (const auto &s : samples)
        if (s.name == name && s.labels == labels)
            return s.value;
    return std::nullopt;
}

PrometheusExposition parsePrometheusText(const std::string &text)
{
    PrometheusExposition out;
    std::set<std::string> finished; // families whose samples are behind us
    std::set<std::string> seen;     // name + labels of every sample
    std::string current;            // the family whose samples come now
    int number = 0;
    try {
        if (text.empty() || text.back() != '\n')
            throw Failure{"the text must end with a newline"};
        std::istringstream in(text);
        std::string line;
        while (std::getline(in, line)) {
            ++number;
            if (line.empty())
                continue;
            if (line[0] == '#') {
                std::istringstream words(line.substr(1));
                std::string keyword, name;
                words >> keyword >> name;
                if (keyword != "HELP" && keyword != "TYPE")
                    continue; // a comment
                if (!std::regex_match(name, kMetricName))
                    throw Failure{"'" + name + "' is not a metric name"};
                std::string rest;
                std::getline(words, rest);
                rest = rest.empty() ? rest : rest.substr(1);
                auto &table = keyword == "HELP" ? out.help : out.types;
                if (table.count(name))
                    throw Failure{keyword + " for " + name + " given twice"};
                if (keyword == "TYPE") {
                    if (rest != "counter" && rest != "gauge" && rest != "histogram" && rest != "summary" &&
                        rest != "untyped")
                        throw Failure{"unknown type '" + rest + "'"};
                    if (finished.count(name) || current == name)
                        throw Failure{"TYPE for " + name + " after its samples"};
                }
                table[name] = keyword == "HELP" ? unescape(rest, false) : rest;
                continue;
            }
            PrometheusSample s = parseSample(line);
            if (s.name != current) {
                if (finished.count(s.name))
                    throw Failure{"the samples of " + s.name + " are not together"};
                if (!current.empty())
                    finished.insert(current);
                current = s.name;
            }
            if (!out.types.count(s.name) || !out.help.count(s.name))
                throw Failure{s.name + " has no HELP or no TYPE line before it"};
            if (out.types[s.name] == "counter" && !(s.value >= 0))
                throw Failure{"counter " + s.name + " is negative"};
            std::string key = s.name;
            for (const auto &[k, v] : s.labels)
                key += "\x1f" + k + "=" + v;
            if (!seen.insert(key).second)
                throw Failure{"sample " + s.name + " given twice"};
            out.samples.push_back(std::move(s));
        }
    } catch (const Failure &f) {
        out.error = "line " + std::to_string(number) + ": " + f.what;
    }
    return out;
}

} // namespace rookery::test
