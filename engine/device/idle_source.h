// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace rookery::device {

/// Tells how long the user has left the machine alone. A seam for the governor's
/// idle rules; tests use tests/fakes/fake_idle_source.h.
///
/// Thread safety: the governor calls a source from one thread at a time (under its
/// lock); implementations need not be thread-safe.
class IdleSource
{
public:
    virtual ~IdleSource() = default;
    /// Time since the last input; nullopt when this source cannot tell right now.
    virtual std::optional<std::chrono::milliseconds> idleTime() = 0;
    /// "logind IdleHint", "X screensaver", ... for logs and the status.
    virtual std::string name() const = 0;
};

/// systemd-logind's aggregated IdleHint over D-Bus (org.freedesktop.login1.Manager on
/// the system bus); nullptr when there is no system bus or no logind. Works for X,
/// Wayland and text sessions and for a node running as a system service; the desktop
/// decides when a session is idle, and the idle time counts from then.
std::unique_ptr<IdleSource> makeLogindIdleSource();

/// The X screensaver extension's time since the last input, loaded with dlopen so a
/// headless machine needs no X libraries; nullptr without $DISPLAY, libXss or an X
/// server that answers.
std::unique_ptr<IdleSource> makeXScreenSaverIdleSource();

/// logind if it answers, else the X screensaver, else nullptr (no way to tell; the
/// governor then treats the user as active and says so in the log).
std::unique_ptr<IdleSource> makeSystemIdleSource();

} // namespace rookery::device
