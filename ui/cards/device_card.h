// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "engine/host/engine_snapshot.h"
#include "ui/cards/card.h"

namespace rookery::ui {

/// The measured device profile: processor, cores, memory, speed, disk, GPUs.
///
/// Thread safety: UI thread.
class DeviceCard : public Card
{
    Q_OBJECT

public:
    explicit DeviceCard(QWidget *parent = nullptr);
    void showDevice(const host::DeviceView &device);

    QLabel *processorLabel() const { return m_processor; }
    QLabel *coresLabel() const { return m_cores; }

private:
    QLabel *m_processor;
    QLabel *m_cores;
    QLabel *m_memory;
    QLabel *m_speed;
    QLabel *m_bandwidth;
    QLabel *m_disk;
    QLabel *m_gpus;
};

} // namespace rookery::ui
