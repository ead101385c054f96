// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/common/arg_parser.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <sstream>

#include "engine/common/error.h"
#include "engine/common/version.h"

namespace rookery {
namespace {

std::string formatDouble(double v)
{
    std::ostringstream out;
    out << v;
    return out.str();
}

} // namespace

ArgParser::ArgParser(std::string program, std::string summary)
    : m_program(std::move(program))
    , m_summary(std::move(summary))
{ }

void ArgParser::add(Spec spec)
{
    if (find(spec.name))
        throw std::logic_error("ArgParser: option declared twice: --" + spec.name);
    m_specs.push_back(std::move(spec));
}

void ArgParser::flag(const std::string &name, const std::string &help, bool *out)
{
    add({name, "", help, out, 0, 0, {}, ""});
}

void ArgParser::option(const std::string &name, const std::string &valueName, const std::string &help, std::string *out)
{
    add({name, valueName, help, out, 0, 0, {}, *out});
}

void ArgParser::option(const std::string &name, const std::string &valueName, const std::string &help, int64_t *out,
                       int64_t min, int64_t max)
{
    add({name, valueName, help, out, double(min), double(max), {}, std::to_string(*out)});
}

void ArgParser::option(const std::string &name, const std::string &valueName, const std::string &help, int *out,
                       int min, int max)
{
    add({name, valueName, help, out, double(min), double(max), {}, std::to_string(*out)});
}

void ArgParser::option(const std::string &name, const std::string &valueName, const std::string &help, double *out,
                       double min, double max)
{
    add({name, valueName, help, out, min, max, {}, formatDouble(*out)});
}

void ArgParser::choice(const std::string &name, const std::string &help, std::string *out,
                       std::vector<std::string> choices)
{
    std::string valueName;
    for (const auto &c : choices)
        valueName += (valueName.empty() ? "" : "|") + c;
    add({name, valueName, help, out, 0, 0, std::move(choices), *out});
}

void ArgParser::epilog(std::string text) { m_epilog = std::move(text); }

const ArgParser::Spec *ArgParser::find(const std::string &name) const
{
    auto it = std::find_if(m_specs.begin(), m_specs.end(), [&](const Spec &s) { return s.name == name; });
    return it == m_specs.end() ? nullptr : &*it;
}

bool ArgParser::given(const std::string &name) const
{
    return std::find(m_given.begin(), m_given.end(), name) != m_given.end();
}

void ArgParser::assign(const Spec &spec, const std::string &value)
{
    const std::string opt = "--" + spec.name;
    auto parseInt = [&](int64_t &result) {
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), result);
        if (ec != std::errc() || end != value.data() + value.size())
            throw Error(opt + ": '" + value + "' is not a whole number");
        if (double(result) < spec.min || double(result) > spec.max)
            throw Error(opt + ": " + value + " is out of range (" + formatDouble(spec.min) + " to " +
                        formatDouble(spec.max) + ")");
    };
    std::visit(
        [&](auto *out) {
            using T = std::remove_pointer_t<decltype(out)>;
            if constexpr (std::is_same_v<T, bool>) {
                *out = true;
            } else if constexpr (std::is_same_v<T, std::string>) {
                if (!spec.choices.empty() &&
                    std::find(spec.choices.begin(), spec.choices.end(), value) == spec.choices.end())
                    throw Error(opt + ": '" + value + "' is not one of " + spec.valueName);
                *out = value;
            } else if constexpr (std::is_same_v<T, double>) {
                double result = 0;
                auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), result);
                if (ec != std::errc() || end != value.data() + value.size())
                    throw Error(opt + ": '" + value + "' is not a number");
                if (result < spec.min || result > spec.max)
                    throw Error(opt + ": " + value + " is out of range (" + formatDouble(spec.min) + " to " +
                                formatDouble(spec.max) + ")");
                *out = result;
            } else {
                int64_t result = 0;
                parseInt(result);
                *out = T(result);
            }
        },
        spec.out);
}

ArgParser::Outcome ArgParser::parse(int argc, const char *const *argv)
{
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            std::fputs(helpText().c_str(), stdout);
            return Outcome::ShowedHelp;
        }
        if (arg == "--version") {
            std::printf("%s %s\n", m_program.c_str(), kVersion);
            return Outcome::ShowedVersion;
        }
        if (arg.rfind("--", 0) != 0)
            throw Error("unexpected argument '" + arg + "' (try " + m_program + " --help)");
        std::string name = arg.substr(2);
        std::string value;
        bool hasValue = false;
        if (auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name.resize(eq);
            hasValue = true;
        }
        const Spec *spec = find(name);
        if (!spec)
            throw Error("unknown option '--" + name + "' (try " + m_program + " --help)");
        const bool isFlag = std::holds_alternative<bool *>(spec->out);
        if (isFlag && hasValue)
            throw Error("--" + name + " takes no value");
        if (!isFlag && !hasValue) {
            if (i + 1 >= argc)
                throw Error("--" + name + " needs a value (" + spec->valueName + ")");
            value = argv[++i];
        }
        assign(*spec, value);
        m_given.push_back(name);
    }
    return Outcome::Run;
}

std::string ArgParser::helpText() const
{
    std::ostringstream out;
    out << "Usage: " << m_program << " [options]\n\n" << m_summary << "\n\nOptions:\n";
    std::vector<std::string> left;
    size_t width = 0;
    for (const auto &s : m_specs) {
        std::string l = "  --" + s.name + (s.valueName.empty() ? "" : " " + s.valueName);
        width = std::max(width, l.size());
        left.push_back(std::move(l));
    }
    width = std::max<size_t>(width, 15);
    for (size_t i = 0; i < m_specs.size(); ++i) {
        const auto &s = m_specs[i];
        out << left[i] << std::string(width + 2 - left[i].size(), ' ') << s.help;
        if (!s.valueName.empty() && !s.defaultText.empty())
            out << " (default: " << s.defaultText << ")";
        out << '\n';
    }
    out << "  --help" << std::string(width + 2 - 8, ' ') << "show this help and exit\n";
    out << "  --version" << std::string(width + 2 - 11, ' ') << "show the version and exit\n";
    if (!m_epilog.empty())
        out << '\n' << m_epilog << '\n';
    return out.str();
}

} // namespace rookery
