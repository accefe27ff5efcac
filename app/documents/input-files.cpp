#include "app/documents/input-files.h"

#include <QDir>
#include <QFileInfo>
#include <QSet>
#include <algorithm>
#include <vector>

#include "app/documents/file-type.h"
#include "engine/common/error.h"

namespace folio {

namespace {

bool isAsciiDigit(QChar c) {
    return c >= u'0' && c <= u'9';
}

bool isHidden(const QFileInfo& info) {
    return info.fileName().startsWith(u'.') || info.isHidden();
}

bool isDocumentFile(const QFileInfo& info) {
    if (hasSupportedSuffix(info.filePath())) {
        return true;
    }
    try {
        return detectFileType(info.filePath()).type != FileType::Unsupported;
    } catch (const Error&) {
        return false;  // unreadable and not named as a document: not one of the folder's documents
    }
}

struct Entry {
    QStringList components;  // the path below the listed folder
    QString path;
};

bool entryLess(const Entry& a, const Entry& b) {
    const qsizetype n = std::min(a.components.size(), b.components.size());
    for (qsizetype i = 0; i < n; ++i) {
        if (const int c = naturalCompare(a.components[i], b.components[i]); c != 0) {
            return c < 0;
        }
    }
    return a.components.size() < b.components.size();
}

void collect(const QDir& dir, const QStringList& prefix, bool recursive, std::vector<Entry>& entries,
             bool& hasSubfolders) {
    const QFileInfoList infos =
        dir.entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot, QDir::NoSort);
    for (const QFileInfo& info : infos) {
        if (isHidden(info)) {
            continue;
        }
        QStringList components = prefix;
        components.append(info.fileName());
        if (info.isDir()) {
            hasSubfolders = true;
            if (recursive && !info.isSymLink()) {
                collect(QDir(info.filePath()), components, recursive, entries, hasSubfolders);
            }
        } else if (info.isFile() && isDocumentFile(info)) {
            entries.push_back(Entry{std::move(components), info.filePath()});
        }
    }
}

QStringList listFolder(const QString& folder, const InputOptions& options, bool& hasSubfolders) {
    const QFileInfo info(folder);
    if (!info.isDir()) {
        fail(folder.toStdString(), ": not a folder");
    }
    if (!info.isReadable() || !info.isExecutable()) {
        fail(folder.toStdString(), ": the folder cannot be read (permission denied)");
    }
    std::vector<Entry> entries;
    collect(QDir(folder), {}, options.recursive, entries, hasSubfolders);
    std::sort(entries.begin(), entries.end(), entryLess);
    QStringList paths;
    paths.reserve(static_cast<qsizetype>(entries.size()));
    for (Entry& entry : entries) {
        paths.append(std::move(entry.path));
    }
    return paths;
}

}  // namespace

int naturalCompare(QStringView a, QStringView b) {
    int tieBreak = 0;  // the first difference in leading zeros
    qsizetype i = 0;
    qsizetype j = 0;
    while (i < a.size() && j < b.size()) {
        if (isAsciiDigit(a[i]) && isAsciiDigit(b[j])) {
            qsizetype startA = i;
            qsizetype startB = j;
            while (startA < a.size() && a[startA] == u'0') {
                ++startA;
            }
            while (startB < b.size() && b[startB] == u'0') {
                ++startB;
            }
            qsizetype endA = startA;
            qsizetype endB = startB;
            while (endA < a.size() && isAsciiDigit(a[endA])) {
                ++endA;
            }
            while (endB < b.size() && isAsciiDigit(b[endB])) {
                ++endB;
            }
            // Without leading zeros, the longer number is the larger; equal lengths compare digit by digit.
            if (endA - startA != endB - startB) {
                return endA - startA < endB - startB ? -1 : 1;
            }
            if (const int c = a.sliced(startA, endA - startA).compare(b.sliced(startB, endB - startB));
                c != 0) {
                return c;
            }
            if (tieBreak == 0 && startA - i != startB - j) {
                tieBreak = startA - i < startB - j ? -1 : 1;
            }
            i = endA;
            j = endB;
            continue;
        }
        const QChar ca = a[i].toCaseFolded();
        const QChar cb = b[j].toCaseFolded();
        if (ca != cb) {
            return ca < cb ? -1 : 1;
        }
        ++i;
        ++j;
    }
    if (i < a.size() || j < b.size()) {
        return i < a.size() ? 1 : -1;
    }
    if (tieBreak != 0) {
        return tieBreak;
    }
    const int exact = a.compare(b);
    return exact < 0 ? -1 : (exact > 0 ? 1 : 0);
}

QStringList listFolder(const QString& folder, const InputOptions& options) {
    bool hasSubfolders = false;
    return listFolder(folder, options, hasSubfolders);
}

QStringList collectInputFiles(const QStringList& inputs, const InputOptions& options) {
    QStringList files;
    QSet<QString> seen;
    const auto add = [&](const QString& path) {
        const QString key = QFileInfo(path).canonicalFilePath();
        if (!seen.contains(key)) {
            seen.insert(key);
            files.append(path);
        }
    };
    for (const QString& input : inputs) {
        const QFileInfo info(input);
        if (!info.exists()) {
            fail(input.toStdString(), ": no such file or folder");
        }
        if (info.isDir()) {
            bool hasSubfolders = false;
            const QStringList listed = listFolder(input, options, hasSubfolders);
            if (listed.isEmpty()) {
                fail(input.toStdString(), ": the folder holds no ", supportedTypesText().toStdString(),
                     " files",
                     hasSubfolders && !options.recursive ? " (its subfolders were not searched)" : "");
            }
            for (const QString& path : listed) {
                add(path);
            }
            continue;
        }
        const DetectedType type = detectFileType(input);
        if (type.type == FileType::Unsupported) {
            failUnsupported(input, type);
        }
        add(input);
    }
    return files;
}

}  // namespace folio
