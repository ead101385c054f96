// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/cards/join_card.h"

#include <QLabel>

#include "ui/bridge/engine_types.h"
#include "ui/theme/theme.h"

namespace rookery::ui {
namespace {

struct Mark
{
    const char *symbol;
    const char *colour; ///< a stateColor() name
    const char *spoken; ///< for screen readers
};

Mark markOf(const std::string &state)
{
    if (state == "done")
        return {"\u2713", "training", "done"};
    if (state == "relayed")
        return {"\u21c4", "waiting", "through the relay"};
    if (state == "failed")
        return {"\u2715", "error", "failed"};
    if (state == "working")
        return {"\u2026", "throttled", "in progress"};
    return {"\u25cb", "idle", "not yet"};
}

QString sentence(const std::string &text)
{
    QString s = toQString(text);
    if (!s.isEmpty())
        s[0] = s[0].toUpper();
    return s;
}

} // namespace

JoinCard::JoinCard(QWidget *parent)
    : Card(tr("Joining the swarm"), parent)
{
    const QString keys[kSteps] = {tr("Connected"), tr("Registered"), tr("Reachable"), tr("Assigned")};
    for (int i = 0; i < kSteps; ++i) {
        m_steps[size_t(i)] = addRow(keys[i]);
        m_steps[size_t(i)]->setTextFormat(Qt::RichText);
    }
    hide();
}

void JoinCard::showJoin(const std::vector<host::JoinStepView> &steps)
{
    setVisible(!steps.empty());
    for (int i = 0; i < kSteps; ++i) {
        QLabel *label = m_steps[size_t(i)];
        if (size_t(i) >= steps.size()) {
            label->setText(QStringLiteral("–"));
            label->setProperty("joinState", QString());
            continue;
        }
        const host::JoinStepView &step = steps[size_t(i)];
        const Mark mark = markOf(step.state);
        const QString colour = stateColor(mark.colour).name();
        const QString text = sentence(step.text).toHtmlEscaped();
        label->setText(QStringLiteral("<span style=\"color:%1\"><b>%2</b></span>&nbsp; %3")
                           .arg(colour, QString::fromUtf8(mark.symbol),
                                step.state == "failed"
                                    ? QStringLiteral("<span style=\"color:%1\">%2</span>").arg(colour, text)
                                    : text));
        label->setProperty("joinState", toQString(step.state));
        label->setAccessibleDescription(tr(mark.spoken) + QStringLiteral(": ") + sentence(step.text));
    }
}

} // namespace rookery::ui
