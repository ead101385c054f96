// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <string>

#include <QString>

namespace rookery::ui {

/// The consent screen's text as HTML: what will run, what leaves the machine, and the
/// limits `limits` (governor key -> value; the volunteer defaults on first run).
QString consentHtml(const std::map<std::string, std::string> &limits);

} // namespace rookery::ui
