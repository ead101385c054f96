// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/join/join_dialog.h"

#include <QButtonGroup>
#include <QDialogButtonBox>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "ui/theme/icons.h"
#include "ui/theme/theme.h"

namespace rookery::ui {
namespace {

QLabel *hint(const QString &text, QWidget *parent)
{
    auto *label = new QLabel(text, parent);
    label->setObjectName(QStringLiteral("cardKey"));
    label->setWordWrap(true);
    return label;
}

} // namespace

JoinDialog::JoinDialog(const JoinChoice &initial, QWidget *parent)
    : QDialog(parent)
    , m_demo(new QRadioButton(tr("Start the &local demo swarm"), this))
    , m_join(new QRadioButton(tr("&Join a swarm by address"), this))
    , m_local(new QRadioButton(tr("Train on this &computer alone"), this))
    , m_nodes(new QSpinBox(this))
    , m_address(new QLineEdit(this))
    , m_problem(new QLabel(this))
    , m_start(new QPushButton(themedIcon(QStringLiteral("resume")), tr("&Start"), this))
{
    setWindowTitle(tr("Start or join a swarm"));
    setAccessibleName(tr("Start or join a swarm"));
    auto *group = new QButtonGroup(this);
    for (auto *b : {m_demo, m_join, m_local})
        group->addButton(b);
    m_demo->setAccessibleName(tr("Start the local demo swarm"));
    m_join->setAccessibleName(tr("Join a swarm by address"));
    m_local->setAccessibleName(tr("Train on this computer alone"));
    m_nodes->setRange(2, 16);
    m_nodes->setSuffix(tr(" peers"));
    m_nodes->setAccessibleName(tr("Peers in the demo swarm"));
    m_address->setPlaceholderText(QStringLiteral("wss://swarm.example.org:7443/#sha256=…"));
    m_address->setAccessibleName(tr("Swarm address"));
    m_address->setClearButtonEnabled(true);
    m_problem->setWordWrap(true);
    m_problem->setStyleSheet(QStringLiteral("color: %1;").arg(stateColor("error").name()));
    m_start->setAccessibleName(tr("Start"));
    m_start->setDefault(true);

    auto *grid = new QGridLayout;
    grid->setColumnMinimumWidth(0, 22);
    grid->setColumnStretch(1, 1);
    grid->setVerticalSpacing(6);
    int row = 0;
    grid->addWidget(m_demo, row++, 0, 1, 2);
    grid->addWidget(hint(tr("A coordinator and a few peers on this computer: the whole swarm at a glance."), this),
                    row++, 1);
    grid->addWidget(m_nodes, row++, 1, Qt::AlignLeft);
    grid->setRowMinimumHeight(row++, 8);
    grid->addWidget(m_join, row++, 0, 1, 2);
    grid->addWidget(hint(tr("The address comes from the swarm's organisers; it carries the coordinator's "
                            "certificate fingerprint."),
                         this),
                    row++, 1);
    grid->addWidget(m_address, row++, 1);
    grid->setRowMinimumHeight(row++, 8);
    grid->addWidget(m_local, row++, 0, 1, 2);
    grid->addWidget(hint(tr("The whole model on this computer; nothing leaves it."), this), row++, 1);

    auto *buttons = new QDialogButtonBox(this);
    buttons->addButton(QDialogButtonBox::Cancel)->setAccessibleName(tr("Cancel"));
    buttons->addButton(m_start, QDialogButtonBox::AcceptRole);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(18, 16, 18, 12);
    layout->addLayout(grid);
    layout->addWidget(m_problem);
    layout->addStretch(1);
    layout->addWidget(buttons);

    m_nodes->setValue(initial.nodes);
    m_address->setText(initial.address);
    (initial.kind == JoinChoice::Kind::Address ? m_join
     : initial.kind == JoinChoice::Kind::Local ? m_local
                                               : m_demo)
        ->setChecked(true);
    for (auto *b : {m_demo, m_join, m_local})
        connect(b, &QRadioButton::toggled, this, &JoinDialog::update);
    connect(m_address, &QLineEdit::textChanged, this, &JoinDialog::update);
    update();
    resize(520, sizeHint().height());
}

JoinChoice JoinDialog::choice() const
{
    JoinChoice c;
    c.kind = m_join->isChecked()    ? JoinChoice::Kind::Address
             : m_local->isChecked() ? JoinChoice::Kind::Local
                                    : JoinChoice::Kind::DemoSwarm;
    c.address = m_address->text().trimmed();
    c.nodes = m_nodes->value();
    return c;
}

void JoinDialog::update()
{
    m_nodes->setEnabled(m_demo->isChecked());
    m_address->setEnabled(m_join->isChecked());
    const QString problem = choice().problem();
    // Say what is wrong only once the person has typed something.
    m_problem->setText(m_address->text().isEmpty() ? QString() : problem);
    m_problem->setVisible(!m_problem->text().isEmpty());
    m_start->setEnabled(problem.isEmpty());
}

} // namespace rookery::ui
