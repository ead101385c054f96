// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <stdexcept>
#include <string>

namespace rookery {

/// The one exception type the engine throws for problems a user can act on: bad input
/// files, bad settings, a database from the future. The message names the thing and
/// says what is wrong, ready to show as is.
///
/// Thread safety: a plain value; safe to copy across threads.
class Error : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

} // namespace rookery
