// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <string>

#include <QDateTime>
#include <QDialog>

class QCheckBox;
class QFormLayout;
class QLabel;
class QPushButton;
class QTabWidget;

namespace rookery::ui {

struct SettingsField;

/// Every governor limit and rule (settings_fields.h), start at login, and consent. It
/// does not talk to the engine: Save emits saveRequested(), and the caller applies the
/// values and answers with applyFinished(), which either closes the dialog or shows the
/// engine's reason for refusing and keeps it open.
///
/// Thread safety: UI thread.
class SettingsDialog : public QDialog
{
    Q_OBJECT

public:
    explicit SettingsDialog(const std::map<std::string, std::string> &values, QWidget *parent = nullptr);

    std::map<std::string, std::string> values() const;
    void setValues(const std::map<std::string, std::string> &values);
    bool startAtLogin() const;
    void setStartAtLogin(bool on);
    void setConsent(bool given, const QDateTime &at);

    /// The engine's answer to a save: "" closes the dialog, else shows the text.
    void applyFinished(const QString &error);
    QString errorText() const;

    /// The editor of a governor key (QSpinBox, QCheckBox or QLineEdit), or nullptr.
    QWidget *editor(const std::string &key) const;
    QPushButton *saveButton() const { return m_save; }
    QPushButton *consentButton() const { return m_consentButton; }
    QTabWidget *tabs() const { return m_tabs; }

Q_SIGNALS:
    void saveRequested();
    void withdrawConsentRequested();
    void giveConsentRequested();

private:
    QWidget *makePage(int page);
    QWidget *makeGeneralPage();
    void addEditor(QFormLayout *form, const SettingsField &field);
    void addOtherEditor(QFormLayout *form, const std::string &key);
    void setBusy(bool busy);

    QTabWidget *m_tabs;
    QLabel *m_error;
    QPushButton *m_save;
    QCheckBox *m_startAtLogin = nullptr;
    QLabel *m_consentText = nullptr;
    QPushButton *m_consentButton = nullptr;
    QFormLayout *m_otherForm = nullptr;
    bool m_consentGiven = false;
    std::map<std::string, QWidget *> m_editors;
};

} // namespace rookery::ui
