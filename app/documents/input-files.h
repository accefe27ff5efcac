// The documents named on a command line or dropped on the window: files as given, folders expanded to their
// PDFs and images in natural order (page2 before page10), hidden files left out.
#pragma once

#include <QString>
#include <QStringList>
#include <QStringView>

namespace folio {

struct InputOptions {
    bool recursive = false;  // folders: their subfolders' files too
};

// Orders names as people count: digit runs by value ("page2" < "page10"), letters without regard to case;
// names equal that way fall back to fewer leading zeros, then to an exact comparison. Negative, zero or
// positive.
int naturalCompare(QStringView a, QStringView b);

inline bool naturalLess(QStringView a, QStringView b) {
    return naturalCompare(a, b) < 0;
}

// The PDFs and images of `folder`, by content or by name (a damaged scan.pdf is listed, so that opening it
// reports what is wrong), in natural order; recursive: with its subfolders' files, ordered by path, folder by
// folder. Hidden files and folders, and links to folders, are left out. Throws folio::Error naming the folder
// where it cannot be read.
QStringList listFolder(const QString& folder, const InputOptions& options = {});

// The documents `inputs` name, in order: files as given, folders as listFolder lists them; a file named twice
// is kept once. Throws folio::Error naming the input where a path does not exist, a file named directly is
// not a PDF or a supported image, or a folder holds none.
QStringList collectInputFiles(const QStringList& inputs, const InputOptions& options = {});

}  // namespace folio
