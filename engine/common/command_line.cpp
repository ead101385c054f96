// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/common/command_line.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <regex>
#include <sstream>

#include "engine/common/error.h"
#include "engine/common/version.h"

namespace rookery::cli {
namespace {

std::string formatNumber(double v)
{
    std::ostringstream out;
    out << v;
    return out.str();
}

bool isHelpOrVersion(const CLI::Option *opt) { return opt->check_lname("help") || opt->check_lname("version"); }

// Our layout: "Usage", the description, every option with its value name and default
// (--help and --version last), the epilog. CLI11's own puts the description first and
// the default after the value name ("--port N=0"), which reads like a syntax.
class HelpFormatter : public CLI::Formatter
{
public:
    std::string make_help(const CLI::App *app, std::string name, CLI::AppFormatMode) const override
    {
        auto options = app->get_options([](const CLI::Option *o) { return !o->get_group().empty(); });
        std::stable_partition(options.begin(), options.end(), [](const CLI::Option *o) { return !isHelpOrVersion(o); });
        std::vector<std::string> left;
        size_t width = 15;
        for (const CLI::Option *o : options) {
            std::string names = o->get_name(false, true);
            for (size_t comma = names.find(','); comma != std::string::npos; comma = names.find(',', comma + 2))
                names.replace(comma, 1, ", ");
            if (o->get_type_size() != 0)
                names += " " + o->get_type_name();
            left.push_back("  " + names);
            width = std::max(width, left.back().size());
        }
        std::ostringstream out;
        out << "Usage: " << name << " [options]\n\n" << app->get_description() << "\n\nOptions:\n";
        for (size_t i = 0; i < options.size(); ++i) {
            const CLI::Option *o = options[i];
            out << left[i] << std::string(width + 2 - left[i].size(), ' ') << o->get_description();
            if (o->get_type_size() != 0 && !o->get_default_str().empty())
                out << " (default: " << o->get_default_str() << ")";
            out << '\n';
        }
        if (!app->get_footer().empty())
            out << '\n' << app->get_footer() << '\n';
        return out.str();
    }
};

// CLI11 words a few mistakes in its own terms; say them as our programs always have.
std::string reword(const std::string &message)
{
    static const std::regex missingValue(R"(^(\S+): \d+ required (.+) missing$)");
    static const std::regex flagValue(R"(^-*(\S+) was given a disallowed flag override$)");
    std::smatch m;
    if (std::regex_match(message, m, missingValue))
        return m[1].str() + " needs a value (" + m[2].str() + ")";
    if (std::regex_match(message, m, flagValue))
        return "--" + m[1].str() + " takes no value";
    return message;
}

} // namespace

void configure(CLI::App &app)
{
    app.formatter(std::make_shared<HelpFormatter>());
    // Unknown arguments are collected and reported by parse(), with a pointer to --help.
    app.allow_extras();
    // As with most tools, a later option overrides an earlier one (a script's defaults
    // followed by the user's own). Flags take no value: "--quiet=no" would read as off.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->disable_flag_override();
    // The help shows each option's default: the bound variable's value when it is declared.
    app.option_defaults()->always_capture_default();
    app.set_help_flag();
    // Both act where they stand, before the options after them are checked.
    const auto showHelp = [] { throw CLI::CallForHelp(); };
    app.add_flag_callback("-h,--help", showHelp, "show this help and exit")->trigger_on_parse();
    app.set_version_flag("--version", app.get_name() + " " + kVersion, "show the version and exit")->trigger_on_parse();
}

CLI::Validator wholeNumber(int64_t min, int64_t max)
{
    return CLI::Validator(
        [min, max](std::string &value) -> std::string {
            int64_t result = 0;
            auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), result);
            if (ec != std::errc() || end != value.data() + value.size())
                return "'" + value + "' is not a whole number";
            if (result < min || result > max)
                return value + " is out of range (" + std::to_string(min) + " to " + std::to_string(max) + ")";
            return {};
        },
        "");
}

CLI::Validator number(double min, double max)
{
    return CLI::Validator(
        [min, max](std::string &value) -> std::string {
            double result = 0;
            auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), result);
            if (ec != std::errc() || end != value.data() + value.size())
                return "'" + value + "' is not a number";
            if (!(result >= min && result <= max)) // also refuses nan
                return value + " is out of range (" + formatNumber(min) + " to " + formatNumber(max) + ")";
            return {};
        },
        "");
}

CLI::Option *addChoice(CLI::App &app, const std::string &name, std::string &out, const std::vector<std::string> &words,
                       const std::string &help)
{
    std::string alternatives;
    for (const auto &w : words)
        alternatives += (alternatives.empty() ? "" : "|") + w;
    return app.add_option(name, out, help)
        ->type_name(alternatives)
        ->check(CLI::Validator(
            [words, alternatives](std::string &value) -> std::string {
                if (std::find(words.begin(), words.end(), value) != words.end())
                    return {};
                return "'" + value + "' is not one of " + alternatives;
            },
            ""));
}

Outcome parse(CLI::App &app, int argc, const char *const *argv)
{
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &) {
        std::fputs(app.help().c_str(), stdout);
        return Outcome::ShowedHelp;
    } catch (const CLI::CallForVersion &e) {
        std::printf("%s\n", e.what());
        return Outcome::ShowedVersion;
    } catch (const CLI::ParseError &e) {
        throw Error(reword(e.what()));
    }
    const auto extras = app.remaining();
    if (!extras.empty()) {
        const std::string &arg = extras.front();
        if (arg.rfind("--", 0) == 0)
            throw Error("unknown option '" + arg.substr(0, arg.find('=')) + "' (try " + app.get_name() + " --help)");
        throw Error("unexpected argument '" + arg + "' (try " + app.get_name() + " --help)");
    }
    return Outcome::Run;
}

} // namespace rookery::cli
