// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace rookery {

/// A small declarative command-line parser shared by every Rookery program. Options
/// write straight into the caller's settings struct; the value already there is the
/// default and is shown in --help. Bad input throws rookery::Error with a message
/// that names the option and says what it expected.
///
/// Thread safety: use from one thread.
class ArgParser
{
public:
    ArgParser(std::string program, std::string summary);

    void flag(const std::string &name, const std::string &help, bool *out);
    void option(const std::string &name, const std::string &valueName, const std::string &help, std::string *out);
    void option(const std::string &name, const std::string &valueName, const std::string &help, int64_t *out,
                int64_t min, int64_t max);
    void option(const std::string &name, const std::string &valueName, const std::string &help, int *out, int min,
                int max);
    void option(const std::string &name, const std::string &valueName, const std::string &help, double *out, double min,
                double max);
    /// An option limited to a fixed set of words.
    void choice(const std::string &name, const std::string &help, std::string *out, std::vector<std::string> choices);
    /// Free text shown after the options, e.g. examples.
    void epilog(std::string text);

    enum class Outcome { Run, ShowedHelp, ShowedVersion };
    /// Parses argv. Prints --help / --version itself and says so in the result.
    Outcome parse(int argc, const char *const *argv);
    /// True when the user named this option on the command line.
    bool given(const std::string &name) const;

    std::string helpText() const;

private:
    struct Spec
    {
        std::string name;
        std::string valueName;
        std::string help;
        std::variant<bool *, std::string *, int64_t *, int *, double *> out;
        double min = 0;
        double max = 0;
        std::vector<std::string> choices;
        std::string defaultText;
    };
    void add(Spec spec);
    const Spec *find(const std::string &name) const;
    void assign(const Spec &spec, const std::string &value);

    std::string m_program;
    std::string m_summary;
    std::string m_epilog;
    std::vector<Spec> m_specs;
    std::vector<std::string> m_given;
};

} // namespace rookery
