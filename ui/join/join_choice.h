// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>

#include <QString>

class QSettings;

namespace rookery::ui {

/// What to train on: the local demo swarm, a swarm by address, or this machine alone.
/// Remembered so that the next start carries on with the same choice.
struct JoinChoice
{
    enum class Kind { DemoSwarm, Address, Local };
    Kind kind = Kind::DemoSwarm;
    QString address; ///< wss://host:port/#sha256=... for Kind::Address
    int nodes = 4;   ///< peers of the local demo swarm, this one included

    /// "" when usable, else what is wrong with the address.
    QString problem() const;
    QString describe() const;
};

std::optional<JoinChoice> loadJoinChoice(const QSettings &settings);
void saveJoinChoice(QSettings &settings, const JoinChoice &choice);

} // namespace rookery::ui
