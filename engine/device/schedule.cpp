// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/schedule.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <sstream>
#include <vector>

#include "engine/common/error.h"

namespace rookery::device {
namespace {

constexpr std::array<std::string_view, 7> kDayNames = {"monday", "tuesday",  "wednesday", "thursday",
                                                       "friday", "saturday", "sunday"};

std::string lower(std::string_view s)
{
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

std::string trim(std::string_view s)
{
    const auto first = s.find_first_not_of(" \t");
    if (first == std::string_view::npos)
        return {};
    const auto last = s.find_last_not_of(" \t");
    return std::string(s.substr(first, last - first + 1));
}

[[noreturn]] void fail(std::string_view rule, const std::string &what)
{
    throw Error("schedule: " + what + " in '" + std::string(rule) +
                "' (expected e.g. 'mon-fri 18:00-08:00, sat-sun all day')");
}

// "mon" or "monday" (any case) -> 0.
std::optional<int> dayIndex(std::string_view word)
{
    const std::string w = lower(word);
    for (size_t i = 0; i < kDayNames.size(); ++i)
        if (w == kDayNames[i] || (w.size() == 3 && kDayNames[i].substr(0, 3) == w))
            return int(i);
    return std::nullopt;
}

// Adds the days of one group ("mon", "fri-mon", "weekdays") to `days`.
void addDayGroup(std::string_view rule, const std::string &group, std::array<bool, 7> &days)
{
    const std::string g = lower(group);
    if (g == "daily" || g == "everyday") {
        days.fill(true);
        return;
    }
    if (g == "weekdays" || g == "weekends") {
        for (int d = 0; d < 7; ++d)
            days[size_t(d)] = days[size_t(d)] || ((d < 5) == (g == "weekdays"));
        return;
    }
    const auto dash = g.find('-');
    const auto first = dayIndex(g.substr(0, dash));
    const auto last = dash == std::string::npos ? first : dayIndex(g.substr(dash + 1));
    if (!first || !last)
        fail(rule, "'" + group + "' is not a day or a range of days (mon ... sun, weekdays, weekends, daily)");
    for (int d = *first;; d = (d + 1) % 7) { // ranges may wrap: fri-mon
        days[size_t(d)] = true;
        if (d == *last)
            break;
    }
}

// "18:00" or "8:00" -> minutes since midnight; "24:00" is allowed as an end.
int parseTime(std::string_view rule, const std::string &text)
{
    const auto colon = text.find(':');
    const auto digits = [](std::string_view s) {
        return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
    };
    const bool shaped = colon != std::string::npos && (colon == 1 || colon == 2) && text.size() == colon + 3 &&
                        digits(std::string_view(text).substr(0, colon)) &&
                        digits(std::string_view(text).substr(colon + 1));
    const int h = shaped ? std::stoi(text.substr(0, colon)) : -1;
    const int m = shaped ? std::stoi(text.substr(colon + 1)) : -1;
    if (!shaped || m > 59 || h > 24 || (h == 24 && m != 0))
        fail(rule, "'" + text + "' is not a time (HH:MM, 00:00 to 24:00)");
    return h * 60 + m;
}

void applyRule(std::string_view rule, std::bitset<7 * 24 * 60> &minutes)
{
    std::vector<std::string> words;
    std::istringstream in{std::string(rule)};
    for (std::string w; in >> w;)
        words.push_back(w);
    if (words.empty())
        fail(rule, "an empty rule");

    int start = 0, end = 0;
    size_t dayWords = 0;
    if (words.size() >= 2 && lower(words[words.size() - 2]) == "all" && lower(words.back()) == "day") {
        start = 0;
        end = 1440;
        dayWords = words.size() - 2;
    } else {
        const std::string &span = words.back();
        const auto dash = span.find('-');
        if (dash == std::string::npos || span.find(':') == std::string::npos)
            fail(rule, "'" + span + "' is not a time span (HH:MM-HH:MM or 'all day')");
        start = parseTime(rule, span.substr(0, dash));
        end = parseTime(rule, span.substr(dash + 1));
        if (start == 1440)
            fail(rule, "a span cannot start at 24:00");
        if (start == end)
            fail(rule, "'" + span + "' is empty; write 'all day' for a whole day");
        dayWords = words.size() - 1;
    }

    std::array<bool, 7> days{};
    if (dayWords == 0)
        days.fill(true);
    for (size_t i = 0; i < dayWords; ++i)
        addDayGroup(rule, words[i], days);

    const int length = end > start ? end - start : end + 1440 - start; // past midnight when end <= start
    for (int d = 0; d < 7; ++d)
        if (days[size_t(d)])
            for (int m = 0; m < length; ++m)
                minutes.set(size_t((d * 1440 + start + m) % (7 * 1440)));
}

} // namespace

Schedule::Schedule() { m_minutes.set(); }

Schedule Schedule::parse(std::string_view text)
{
    Schedule s;
    s.m_text = trim(text);
    const std::string t = lower(s.m_text);
    if (t.empty() || t == "always")
        return s;
    s.m_minutes.reset();
    std::string rules = s.m_text;
    std::replace(rules.begin(), rules.end(), ';', ',');
    std::istringstream in(rules);
    for (std::string rule; std::getline(in, rule, ',');)
        applyRule(trim(rule), s.m_minutes);
    if (s.m_text.back() == ',' || s.m_text.back() == ';')
        fail(s.m_text, "a trailing separator");
    return s;
}

std::optional<WeekTime> Schedule::nextChange(WeekTime from) const
{
    const int start = from.minuteOfWeek();
    const bool now = m_minutes.test(size_t(start));
    for (int i = 1; i < int(kMinutesPerWeek); ++i) {
        const int m = (start + i) % int(kMinutesPerWeek);
        if (m_minutes.test(size_t(m)) != now)
            return WeekTime::fromMinuteOfWeek(m);
    }
    return std::nullopt;
}

} // namespace rookery::device
