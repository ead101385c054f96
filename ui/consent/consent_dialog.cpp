// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/consent/consent_dialog.h"

#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "ui/consent/consent_text.h"
#include "ui/theme/icons.h"

namespace rookery::ui {

ConsentDialog::ConsentDialog(const std::map<std::string, std::string> &limits, QWidget *parent)
    : QDialog(parent)
    , m_agree(new QPushButton(tr("I &agree, start contributing"), this))
    , m_decline(new QPushButton(tr("&Not now"), this))
{
    setWindowTitle(tr("Rookery: before anything runs"));
    setAccessibleName(tr("Consent"));
    setModal(true);

    auto *icon = new QLabel(this);
    icon->setPixmap(appIcon().pixmap(48, 48));
    auto *title = new QLabel(tr("Before Rookery computes anything"), this);
    QFont font = title->font();
    font.setPointSizeF(font.pointSizeF() * 1.45);
    font.setWeight(QFont::DemiBold);
    title->setFont(font);
    auto *head = new QHBoxLayout;
    head->addWidget(icon);
    head->addSpacing(8);
    head->addWidget(title, 1);

    auto *text = new QTextBrowser(this);
    text->setHtml(consentHtml(limits));
    text->setOpenLinks(false);
    text->setFrameShape(QFrame::NoFrame);
    text->setAccessibleName(tr("What Rookery will do"));
    text->viewport()->setAutoFillBackground(false);
    text->document()->setDocumentMargin(2);

    m_agree->setIcon(themedIcon(QStringLiteral("consent")));
    m_agree->setAccessibleName(tr("I agree, start contributing"));
    m_decline->setAccessibleName(tr("Not now"));
    // Agreeing must be a deliberate choice: Enter does not press it, Escape declines.
    m_agree->setAutoDefault(false);
    m_decline->setAutoDefault(false);
    auto *buttons = new QDialogButtonBox(this);
    buttons->addButton(m_decline, QDialogButtonBox::RejectRole);
    buttons->addButton(m_agree, QDialogButtonBox::AcceptRole);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(22, 18, 22, 16);
    layout->setSpacing(12);
    layout->addLayout(head);
    layout->addWidget(text, 1);
    layout->addWidget(buttons);
    resize(640, 600);
    text->setFocus();
    setTabOrder(text, m_decline);
    setTabOrder(m_decline, m_agree);
}

} // namespace rookery::ui
