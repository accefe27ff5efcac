// The devices the engine can run on, as the settings offer them: each CUDA device (its name and memory),
// then the CPU.
#pragma once

#include <QList>
#include <QString>

namespace folio {

struct ComputeDevice {
    QString id;  // "cuda:0", "cpu", "cuda:0,cuda:1": the settings' value and folio-cli's --device (--devices)
    QString name;  // "NVIDIA GeForce RTX 4070 (12.0 GB)", "CPU (16 threads)"
    qint64 memoryBytes = 0;
};

// Every CUDA device this build can use (none without CUDA), all of them together where there are several
// (their ids joined by commas: data parallelism), then the CPU.
QList<ComputeDevice> computeDevices();

}  // namespace folio
