// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/join/join_choice.h"

#include <QCoreApplication>
#include <QSettings>

#include "engine/net/coordinator_address.h"

namespace rookery::ui {
namespace {

QString tr(const char *text) { return QCoreApplication::translate("rookery::ui::JoinChoice", text); }

const QString kKind = QStringLiteral("session/kind");
const QString kAddress = QStringLiteral("session/address");
const QString kNodes = QStringLiteral("session/nodes");

} // namespace

QString JoinChoice::problem() const
{
    if (kind == Kind::DemoSwarm && (nodes < 2 || nodes > 16))
        return tr("The local demo swarm needs between 2 and 16 peers.");
    if (kind != Kind::Address)
        return {};
    const QString text = address.trimmed();
    if (text.isEmpty())
        return tr("Enter the swarm's address, e.g. wss://swarm.example.org:7443/#sha256=…");
    // The engine's own parser: what passes here is exactly what the node accepts.
    try {
        net::CoordinatorAddress::parse(text.toStdString());
    } catch (const std::exception &e) {
        return tr("This is not a join string: %1. Paste the whole string the swarm's operator gave you, e.g. "
                  "wss://swarm.example.org:7443/#sha256=…")
            .arg(QString::fromStdString(e.what()));
    }
    return {};
}

QString JoinChoice::describe() const
{
    switch (kind) {
    case Kind::DemoSwarm:
        return tr("the local demo swarm (%1 peers)").arg(nodes);
    case Kind::Address:
        return tr("the swarm at %1").arg(address);
    case Kind::Local:
        return tr("this computer alone");
    }
    return {};
}

std::optional<JoinChoice> loadJoinChoice(const QSettings &settings)
{
    const QString kind = settings.value(kKind).toString();
    JoinChoice c;
    if (kind == QLatin1String("demo"))
        c.kind = JoinChoice::Kind::DemoSwarm;
    else if (kind == QLatin1String("address"))
        c.kind = JoinChoice::Kind::Address;
    else if (kind == QLatin1String("local"))
        c.kind = JoinChoice::Kind::Local;
    else
        return std::nullopt;
    c.address = settings.value(kAddress).toString();
    c.nodes = settings.value(kNodes, 4).toInt();
    if (!c.problem().isEmpty())
        return std::nullopt;
    return c;
}

void saveJoinChoice(QSettings &settings, const JoinChoice &c)
{
    const char *kind = c.kind == JoinChoice::Kind::DemoSwarm ? "demo"
                       : c.kind == JoinChoice::Kind::Address ? "address"
                                                             : "local";
    settings.setValue(kKind, QString::fromLatin1(kind));
    settings.setValue(kAddress, c.address);
    settings.setValue(kNodes, c.nodes);
    settings.sync();
}

} // namespace rookery::ui
