// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

/// What every Rookery program's command line has in common, on top of CLI11. Programs
/// declare their options with CLI11's own calls, or with the helpers below for numbers
/// with a range and fixed words; these helpers make the programs agree on the rest: long options, the last of a repeated option wins, flags take no value,
/// --help and --version act where they stand, help in the order "usage, description,
/// options with their defaults, epilog", and one-line errors that name the option.
///
/// Thread safety: use from one thread.
namespace rookery::cli {

/// Sets up `app` the Rookery way and adds --help and --version ("<name> <version>").
/// Call it first, before declaring options; set the bound variables' defaults before
/// declaring them too, as the help shows those values. Put examples in `app.footer()`.
void configure(CLI::App &app);

/// Accepts a whole number in [min, max]; refuses anything else with a message that
/// quotes the value and says what was expected.
CLI::Validator wholeNumber(int64_t min, int64_t max);

/// Accepts a number (decimal or scientific) in [min, max].
CLI::Validator number(double min, double max);

/// A whole-number option in [min, max], shown as "--name VALUE" in the help.
template <typename T>
CLI::Option *addWholeNumber(CLI::App &app, const std::string &name, T &out, int64_t min, int64_t max,
                            const std::string &value, const std::string &help)
{
    return app.add_option(name, out, help)->type_name(value)->check(wholeNumber(min, max));
}

/// A number option in [min, max], shown as "--name VALUE" in the help.
inline CLI::Option *addNumber(CLI::App &app, const std::string &name, double &out, double min, double max,
                              const std::string &value, const std::string &help)
{
    return app.add_option(name, out, help)->type_name(value)->check(number(min, max));
}

/// An option limited to a fixed set of words, shown as "--name a|b|c" in the help.
CLI::Option *addChoice(CLI::App &app, const std::string &name, std::string &out, const std::vector<std::string> &words,
                       const std::string &help);

enum class Outcome { Run, ShowedHelp, ShowedVersion };

/// Parses argv. Prints --help / --version to stdout itself and says so in the result.
/// Throws rookery::Error with one line that names the option and what is wrong; the
/// caller prefixes the program's name and exits with status 2.
Outcome parse(CLI::App &app, int argc, const char *const *argv);

} // namespace rookery::cli
