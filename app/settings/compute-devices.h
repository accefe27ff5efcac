// The devices the engine can run on, as the settings offer them: each CUDA device (its name and memory),
// then the CPU.
#pragma once

#include <QList>
#include <QString>

namespace folio {

struct ComputeDevice {
    QString id;    // "cuda:0", "cpu": the settings' value and folio-cli's --device
    QString name;  // "NVIDIA GeForce RTX 4070 (12.0 GB)", "CPU (16 threads)"
    qint64 memoryBytes = 0;
};

// Every CUDA device this build can use (none without CUDA), then the CPU.
QList<ComputeDevice> computeDevices();

}  // namespace folio
