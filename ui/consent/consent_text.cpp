// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/consent/consent_text.h"

#include <QCoreApplication>
#include <QStringList>

#include "ui/settings/settings_fields.h"

namespace rookery::ui {
namespace {

QString tr(const char *text) { return QCoreApplication::translate("rookery::ui::ConsentText", text); }

QString limitsLine(SettingsPage page, const std::map<std::string, std::string> &limits)
{
    QStringList parts;
    for (const auto &f : settingsFields()) {
        if (f.page != page)
            continue;
        const auto it = limits.find(f.key);
        const std::string value = it == limits.end() ? f.defaultValue : it->second;
        parts << QStringLiteral("%1: <b>%2</b>")
                     .arg(f.label.toHtmlEscaped(), describeSettingValue(f, value).toHtmlEscaped());
    }
    return parts.join(QStringLiteral(", "));
}

} // namespace

QString consentHtml(const std::map<std::string, std::string> &limits)
{
    QString html;
    html += QStringLiteral("<p>%1</p>")
                .arg(tr("Rookery trains a shared neural network together with other volunteers. "
                        "Nothing runs on this computer until you agree below."));
    html += QStringLiteral("<h3>%1</h3><p>%2</p>")
                .arg(tr("What will run"),
                     tr("Training of a shared model on this computer's processor (CPU), within the limits below. "
                        "Rookery first measures this computer's speed, memory and disk so that the swarm can give "
                        "it a part of the model that fits."));
    html += QStringLiteral("<h3>%1</h3><ul><li>%2</li><li>%3</li><li>%4</li></ul>")
                .arg(tr("What leaves this computer"),
                     tr("To other volunteers in the swarm: the model's activations, gradients and weights for the "
                        "part of the model this computer holds."),
                     tr("To the swarm's coordinator: the measured device profile (processor, cores, memory, speed) "
                        "and the training throughput."),
                     tr("<b>Never</b> your personal files, and nothing you type or view."));
    html += QStringLiteral("<h3>%1</h3><ul><li>%2: %3.</li><li>%4: %5.</li><li>%6: %7.</li></ul>")
                .arg(tr("Default limits"), tr("While you use the computer"), limitsLine(SettingsPage::Active, limits),
                     tr("While you are away"), limitsLine(SettingsPage::Idle, limits), tr("Rules"),
                     limitsLine(SettingsPage::Rules, limits));
    html += QStringLiteral("<h3>%1</h3><p>%2</p>")
                .arg(tr("You stay in control"),
                     tr("Pause, snooze or change any limit at any time, from this window or the tray icon. You can "
                        "withdraw consent in Settings or the Rookery menu: Rookery then saves a checkpoint and stops "
                        "computing."));
    return html;
}

} // namespace rookery::ui
