// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/cards/device_card.h"

#include <QDateTime>
#include <QLabel>

#include "engine/common/format.h"
#include "ui/bridge/engine_types.h"

namespace rookery::ui {

DeviceCard::DeviceCard(QWidget *parent)
    : Card(tr("This computer"), parent)
    , m_processor(addRow(tr("Processor")))
    , m_cores(addRow(tr("Cores")))
    , m_memory(addRow(tr("Memory")))
    , m_speed(addRow(tr("Speed")))
    , m_bandwidth(addRow(tr("Memory bandwidth")))
    , m_disk(addRow(tr("Disk free")))
    , m_gpus(addRow(tr("GPUs")))
{
    setNote(tr("Not measured yet: Rookery measures this computer before it trains."));
}

void DeviceCard::showDevice(const host::DeviceView &d)
{
    const QString dash = QStringLiteral("–");
    if (!d.measured) {
        for (QLabel *l : {m_processor, m_cores, m_memory, m_speed, m_bandwidth, m_disk, m_gpus})
            l->setText(dash);
        setNote(tr("Not measured yet: Rookery measures this computer before it trains."));
        return;
    }
    m_processor->setText(d.cpuModel.empty() ? tr("unknown") : toQString(d.cpuModel));
    m_cores->setText(tr("%1 physical, %2 logical").arg(d.physicalCores).arg(d.logicalCores));
    m_memory->setText(tr("%1 free of %2")
                          .arg(toQString(format::bytes(double(d.ramAvailableBytes))),
                               toQString(format::bytes(double(d.ramTotalBytes)))));
    m_speed->setText(
        tr("%1 GFLOP/s per core, %2 all cores").arg(d.gflopsOneThread, 0, 'f', 1).arg(d.gflopsAllThreads, 0, 'f', 1));
    m_bandwidth->setText(d.memoryBandwidthGBs > 0 ? tr("%1 GB/s").arg(d.memoryBandwidthGBs, 0, 'f', 1) : dash);
    m_disk->setText(toQString(format::bytes(double(d.diskFreeBytes))));
    QStringList gpus;
    for (const auto &g : d.gpus)
        gpus << toQString(g);
    m_gpus->setText(gpus.isEmpty() ? tr("none") : gpus.join(QLatin1Char('\n')));
    const QDateTime at = QDateTime::fromMSecsSinceEpoch(d.measuredAtMs);
    setNote(d.measuredAtMs > 0 ? tr("Measured %1").arg(QLocale().toString(at, QLocale::ShortFormat)) : QString());
}

} // namespace rookery::ui
