// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/settings/settings_dialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QVBoxLayout>

#include "ui/settings/settings_fields.h"
#include "ui/theme/icons.h"
#include "ui/theme/theme.h"

namespace rookery::ui {
namespace {

QLabel *helpLabel(const QString &text, QWidget *parent)
{
    auto *label = new QLabel(text, parent);
    label->setWordWrap(true);
    label->setObjectName(QStringLiteral("cardKey"));
    QFont font = label->font();
    font.setPointSizeF(font.pointSizeF() * 0.9);
    label->setFont(font);
    return label;
}

QString pageContext(SettingsPage page)
{
    switch (page) {
    case SettingsPage::Active:
        return SettingsDialog::tr("while you use the computer");
    case SettingsPage::Idle:
        return SettingsDialog::tr("while you are away");
    case SettingsPage::Rules:
        break;
    }
    return {};
}

} // namespace

SettingsDialog::SettingsDialog(const std::map<std::string, std::string> &values, QWidget *parent)
    : QDialog(parent)
    , m_tabs(new QTabWidget(this))
    , m_error(new QLabel(this))
    , m_save(new QPushButton(tr("&Save"), this))
{
    setWindowTitle(tr("Rookery settings"));
    setAccessibleName(tr("Settings"));
    m_tabs->setAccessibleName(tr("Settings pages"));
    m_tabs->addTab(makePage(int(SettingsPage::Active)), tr("While you &work"));
    m_tabs->addTab(makePage(int(SettingsPage::Idle)), tr("While you are a&way"));
    m_tabs->addTab(makePage(int(SettingsPage::Rules)), tr("&Rules"));
    m_tabs->addTab(makeGeneralPage(), tr("&General"));

    m_error->setWordWrap(true);
    m_error->setAccessibleName(tr("Settings error"));
    m_error->setStyleSheet(QStringLiteral("color: %1;").arg(stateColor("error").name()));
    m_error->hide();

    auto *buttons = new QDialogButtonBox(this);
    auto *defaults = buttons->addButton(QDialogButtonBox::RestoreDefaults);
    defaults->setAccessibleName(tr("Restore defaults"));
    auto *cancel = buttons->addButton(QDialogButtonBox::Cancel);
    cancel->setAccessibleName(tr("Cancel"));
    buttons->addButton(m_save, QDialogButtonBox::AcceptRole);
    m_save->setAccessibleName(tr("Save settings"));
    m_save->setDefault(true);
    connect(defaults, &QPushButton::clicked, this, [this] { setValues(defaultGovernorSettings()); });
    connect(cancel, &QPushButton::clicked, this, &QDialog::reject);
    connect(m_save, &QPushButton::clicked, this, [this] {
        setBusy(true);
        Q_EMIT saveRequested();
    });

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(16, 14, 16, 12);
    layout->addWidget(m_tabs, 1);
    layout->addWidget(m_error);
    layout->addWidget(buttons);
    setValues(values);
    resize(600, 520);
}

QWidget *SettingsDialog::makePage(int page)
{
    auto *widget = new QWidget(m_tabs);
    auto *form = new QFormLayout(widget);
    form->setContentsMargins(16, 16, 16, 16);
    form->setVerticalSpacing(6);
    form->setLabelAlignment(Qt::AlignRight | Qt::AlignVCenter);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    for (const auto &f : settingsFields())
        if (int(f.page) == page)
            addEditor(form, f);
    if (page == int(SettingsPage::Rules))
        m_otherForm = form; // keys the engine knows and this table does not go here
    return widget;
}

void SettingsDialog::addEditor(QFormLayout *form, const SettingsField &f)
{
    QWidget *editor = nullptr;
    QWidget *page = form->parentWidget();
    const QString context = pageContext(f.page);
    const QString name = context.isEmpty() ? f.label : f.label + QLatin1Char(' ') + context;
    switch (f.kind) {
    case SettingsField::Kind::Integer: {
        auto *spin = new QSpinBox(page);
        spin->setRange(f.min, f.max);
        spin->setSuffix(f.unit);
        if (f.min == 0 && !f.zeroText.isEmpty())
            spin->setSpecialValueText(f.zeroText);
        spin->setGroupSeparatorShown(true);
        spin->setMaximumWidth(200);
        editor = spin;
        form->addRow(f.label + QLatin1Char(':'), spin);
        break;
    }
    case SettingsField::Kind::Switch: {
        auto *box = new QCheckBox(f.label, page);
        editor = box;
        form->addRow(QString(), box);
        break;
    }
    case SettingsField::Kind::Text: {
        auto *line = new QLineEdit(page);
        line->setPlaceholderText(tr("any time"));
        line->setClearButtonEnabled(true);
        editor = line;
        form->addRow(f.label + QLatin1Char(':'), line);
        break;
    }
    }
    editor->setAccessibleName(name);
    editor->setAccessibleDescription(f.help);
    editor->setToolTip(f.help);
    editor->setObjectName(QString::fromStdString(f.key));
    form->addRow(QString(), helpLabel(f.help, page));
    m_editors[f.key] = editor;
}

void SettingsDialog::addOtherEditor(QFormLayout *form, const std::string &key)
{
    auto *line = new QLineEdit(form->parentWidget());
    const QString name = QString::fromStdString(key);
    line->setAccessibleName(name);
    line->setObjectName(name);
    form->addRow(name + QLatin1Char(':'), line);
    m_editors[key] = line;
}

QWidget *SettingsDialog::makeGeneralPage()
{
    auto *widget = new QWidget(m_tabs);
    auto *layout = new QVBoxLayout(widget);
    layout->setContentsMargins(16, 16, 16, 16);
    layout->setSpacing(14);

    m_startAtLogin = new QCheckBox(tr("Start Rookery when I &log in (in the tray)"), widget);
    m_startAtLogin->setAccessibleName(tr("Start Rookery when I log in"));
    layout->addWidget(m_startAtLogin);
    layout->addWidget(helpLabel(tr("Adds an entry to your desktop's autostart folder; unticking removes it."), widget));

    auto *consent = new QGroupBox(tr("Consent"), widget);
    auto *consentLayout = new QVBoxLayout(consent);
    m_consentText = new QLabel(consent);
    m_consentText->setWordWrap(true);
    m_consentButton = new QPushButton(consent);
    m_consentButton->setIcon(themedIcon(QStringLiteral("consent")));
    consentLayout->addWidget(m_consentText);
    consentLayout->addWidget(m_consentButton, 0, Qt::AlignLeft);
    layout->addWidget(consent);
    layout->addStretch(1);
    connect(m_consentButton, &QPushButton::clicked, this, [this] {
        if (m_consentGiven)
            Q_EMIT withdrawConsentRequested();
        else
            Q_EMIT giveConsentRequested();
    });
    setConsent(false, {});
    return widget;
}

void SettingsDialog::setConsent(bool given, const QDateTime &at)
{
    m_consentGiven = given;
    if (given) {
        m_consentText->setText(at.isValid() ? tr("You agreed that Rookery may compute on this computer on %1.")
                                                  .arg(QLocale().toString(at.toLocalTime(), QLocale::LongFormat))
                                            : tr("You agreed that Rookery may compute on this computer."));
        m_consentButton->setText(tr("&Withdraw consent…"));
        m_consentButton->setAccessibleName(tr("Withdraw consent"));
    } else {
        m_consentText->setText(tr("You have not agreed yet: nothing computes."));
        m_consentButton->setText(tr("Review and &give consent…"));
        m_consentButton->setAccessibleName(tr("Review and give consent"));
    }
}

std::map<std::string, std::string> SettingsDialog::values() const
{
    std::map<std::string, std::string> out;
    for (const auto &[key, editor] : m_editors) {
        if (auto *spin = qobject_cast<QSpinBox *>(editor))
            out[key] = std::to_string(spin->value());
        else if (auto *box = qobject_cast<QCheckBox *>(editor))
            out[key] = box->isChecked() ? "true" : "false";
        else if (auto *line = qobject_cast<QLineEdit *>(editor))
            out[key] = line->text().trimmed().toStdString();
    }
    return out;
}

void SettingsDialog::setValues(const std::map<std::string, std::string> &values)
{
    for (const auto &[key, value] : values) {
        if (!m_editors.count(key) && m_otherForm)
            addOtherEditor(m_otherForm, key);
        QWidget *editor = m_editors.at(key);
        const QString text = QString::fromStdString(value);
        if (auto *spin = qobject_cast<QSpinBox *>(editor))
            spin->setValue(int(text.toLongLong()));
        else if (auto *box = qobject_cast<QCheckBox *>(editor))
            box->setChecked(value == "true");
        else if (auto *line = qobject_cast<QLineEdit *>(editor))
            line->setText(text);
    }
}

bool SettingsDialog::startAtLogin() const { return m_startAtLogin->isChecked(); }

void SettingsDialog::setStartAtLogin(bool on) { m_startAtLogin->setChecked(on); }

QWidget *SettingsDialog::editor(const std::string &key) const
{
    const auto it = m_editors.find(key);
    return it == m_editors.end() ? nullptr : it->second;
}

void SettingsDialog::setBusy(bool busy)
{
    m_save->setEnabled(!busy);
    m_save->setText(busy ? tr("Applying…") : tr("&Save"));
}

void SettingsDialog::applyFinished(const QString &error)
{
    setBusy(false);
    m_error->setText(error.isEmpty() ? QString() : tr("The engine refused these settings: %1").arg(error));
    m_error->setVisible(!error.isEmpty());
    if (error.isEmpty())
        accept();
}

QString SettingsDialog::errorText() const { return m_error->text(); }

} // namespace rookery::ui
