// Models on disk without the network: the catalogue and its file patterns, the Hugging Face settings from
// the environment, the cache's layout (refs, listings, links, listing and removal), the Hub's answers read
// from their JSON, folder checks and the --model locator.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>

#include "app/hub/blob-hash.h"
#include "app/hub/folder-check.h"
#include "app/hub/hub-api.h"
#include "app/hub/hub-cache.h"
#include "app/hub/hub-client.h"
#include "app/hub/hub-settings.h"
#include "app/hub/model-catalogue.h"
#include "app/hub/model-locator.h"
#include "engine/common/error.h"
#include "safetensors-writer.h"
#include "temp-dir.h"

namespace folio::hub {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const fs::path kTinyModel = fs::path(FOLIO_FIXTURES_DIR) / "paddleocr-vl-tiny";

EnvironmentLookup table(std::map<std::string, std::string> values) {
    return [values = std::move(values)](const char* name) -> std::optional<std::string> {
        const auto it = values.find(name);
        return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
}

void write(const fs::path& path, const std::string& content) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << content;
}

// A recognition model folder with valid files.
void write_model(const fs::path& dir) {
    write(dir / "config.json", R"({"model_type": "paddleocr_vl"})");
    write(dir / "tokenizer.model", "sentencepiece");
    test::write_safetensors(dir / "model.safetensors",
                            {test::make_tensor("w", "F32", {2, 2}, std::vector<float>{1, 2, 3, 4})});
}

std::string joined(const std::vector<std::string>& problems) {
    std::string text;
    for (const std::string& p : problems) {
        text += p + "\n";
    }
    return text;
}

TEST(ModelCatalogue, PairsEachRecognitionModelWithItsLayoutModel) {
    const CatalogueEntry* v1 = find_catalogue_entry("PaddlePaddle/PaddleOCR-VL");
    ASSERT_NE(v1, nullptr);
    EXPECT_EQ(v1->kind, ModelKind::Recognition);
    EXPECT_EQ(v1->layout_repo, "PaddlePaddle/PP-DocLayoutV2_safetensors");
    for (const char* repo : {"PaddlePaddle/PaddleOCR-VL-1.5", "paddlepaddle/paddleocr-vl-1.6"}) {
        const CatalogueEntry* entry = find_catalogue_entry(repo);
        ASSERT_NE(entry, nullptr) << repo;
        EXPECT_EQ(entry->layout_repo, "PaddlePaddle/PP-DocLayoutV3_safetensors");
    }
    for (const CatalogueEntry& entry : model_catalogue()) {
        if (!entry.layout_repo.empty()) {
            const CatalogueEntry* layout = find_catalogue_entry(entry.layout_repo);
            ASSERT_NE(layout, nullptr) << entry.layout_repo;
            EXPECT_EQ(layout->kind, ModelKind::Layout);
        }
    }
    EXPECT_EQ(find_catalogue_entry("PaddlePaddle/PaddleOCR-VL-2"), nullptr);
}

TEST(ModelCatalogue, ListsTheChatModels) {
    for (const char* repo : {"baidu/ERNIE-4.5-VL-28B-A3B-PT", "baidu/ernie-4.5-vl-28b-a3b-thinking",
                             "deepseek-ai/DeepSeek-R1-Distill-Llama-8B"}) {
        const CatalogueEntry* entry = find_catalogue_entry(repo);
        ASSERT_NE(entry, nullptr) << repo;
        EXPECT_EQ(entry->kind, ModelKind::Chat);
        EXPECT_TRUE(entry->layout_repo.empty());
    }
    // A chat model's folder is told apart by its config, and needs what a recognition model needs.
    TempDir dir;
    write(dir / "c" / "config.json", R"({"model_type": "ernie4_5_vl_moe"})");
    EXPECT_EQ(detect_model_kind(dir / "c"), ModelKind::Chat);
    write(dir / "l" / "config.json", R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"]})");
    EXPECT_EQ(detect_model_kind(dir / "l"), ModelKind::Chat);
    const auto& chat = fetch_patterns(ModelKind::Chat);
    EXPECT_TRUE(std::any_of(chat.begin(), chat.end(),
                            [](const std::string& p) { return glob_match(p, "tokenizer.model"); }));
    EXPECT_TRUE(std::any_of(chat.begin(), chat.end(), [](const std::string& p) {
        return glob_match(p, "model-00001-of-00012.safetensors");
    }));
}

TEST(ModelCatalogue, PatternsFetchTheTopLevelModelFilesOnly) {
    const auto& recognition = fetch_patterns(ModelKind::Recognition);
    for (const char* path : {"config.json", "preprocessor_config.json", "tokenizer.json", "tokenizer.model",
                             "tokenizer_config.json", "chat_template.jinja", "model.safetensors",
                             "model-00001-of-00002.safetensors", "model.safetensors.index.json",
                             "generation_config.json", "special_tokens_map.json", "added_tokens.json"}) {
        EXPECT_TRUE(matches_any(recognition, path)) << path;
    }
    // PaddleOCR-VL's repository also carries PP-DocLayoutV2 in Paddle's inference format, and more.
    for (const char* path :
         {"PP-DocLayoutV2/inference.pdiparams", "PP-DocLayoutV2/inference.yml", "PP-DocLayoutV2/config.json",
          "sub/model.safetensors", "README.md", "imgs/a.png", "modeling_paddleocr_vl.py", ".gitattributes"}) {
        EXPECT_FALSE(matches_any(recognition, path)) << path;
    }
    const auto& layout = fetch_patterns(ModelKind::Layout);
    EXPECT_TRUE(matches_any(layout, "model.safetensors"));
    EXPECT_FALSE(matches_any(layout, "tokenizer.json"));
}

TEST(ModelCatalogue, GlobMatching) {
    EXPECT_TRUE(glob_match("*.safetensors", "a.safetensors"));
    EXPECT_TRUE(glob_match("*", "anything"));
    EXPECT_FALSE(glob_match("*", "a/b"));
    EXPECT_TRUE(glob_match("*/*.json", "a/b.json"));
    EXPECT_TRUE(glob_match("model-?\?\?\?\?-of-*.safetensors", "model-00001-of-00002.safetensors"));
    EXPECT_FALSE(glob_match("model-?\?\?\?\?-of-*.safetensors", "model-0001-of-00002.safetensors"));
    EXPECT_TRUE(glob_match("a*b*c", "aXbYbZc"));
    EXPECT_FALSE(glob_match("a*b*c", "aXbYbZ"));
    EXPECT_FALSE(glob_match("config.json", "Config.json"));
}

TEST(HubSettings, FollowHuggingFaceHubsEnvironment) {
    HubSettings s = hub_settings_from_environment(table({{"HOME", "/home/u"}}));
    EXPECT_EQ(s.endpoint, "https://huggingface.co");
    EXPECT_EQ(s.cache_dir, "/home/u/.cache/huggingface/hub");
    EXPECT_EQ(s.models_dir, "/home/u/.local/share/folio/models");
    EXPECT_EQ(s.token_path, "/home/u/.cache/huggingface/token");
    EXPECT_FALSE(s.token);
    EXPECT_FALSE(s.offline);

    s = hub_settings_from_environment(
        table({{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "/xdg/cache"}, {"XDG_DATA_HOME", "/xdg/data"}}));
    EXPECT_EQ(s.cache_dir, "/xdg/cache/huggingface/hub");
    EXPECT_EQ(s.models_dir, "/xdg/data/folio/models");

    s = hub_settings_from_environment(
        table({{"HOME", "/home/u"}, {"HF_HOME", "~/hf"}, {"HF_ENDPOINT", "https://m.example//"}}));
    EXPECT_EQ(s.cache_dir, "/home/u/hf/hub");
    EXPECT_EQ(s.token_path, "/home/u/hf/token");
    EXPECT_EQ(s.endpoint, "https://m.example");

    s = hub_settings_from_environment(table({{"HF_HOME", "/hf"}, {"HUGGINGFACE_HUB_CACHE", "/legacy"}}));
    EXPECT_EQ(s.cache_dir, "/legacy");
    s = hub_settings_from_environment(
        table({{"HF_HOME", "/hf"}, {"HUGGINGFACE_HUB_CACHE", "/legacy"}, {"HF_HUB_CACHE", "/new"}}));
    EXPECT_EQ(s.cache_dir, "/new");

    s = hub_settings_from_environment(
        table({{"HF_TOKEN", "  hf_abc \n"}, {"HF_TOKEN_PATH", "/nonexistent"}}));
    EXPECT_EQ(s.token, "hf_abc");
    EXPECT_EQ(s.token_source, "HF_TOKEN");

    for (const char* yes : {"1", "ON", "yes", "True"}) {
        EXPECT_TRUE(hub_settings_from_environment(table({{"HF_HUB_OFFLINE", yes}})).offline) << yes;
    }
    EXPECT_FALSE(hub_settings_from_environment(table({{"HF_HUB_OFFLINE", "0"}})).offline);
    EXPECT_TRUE(hub_settings_from_environment(table({{"TRANSFORMERS_OFFLINE", "1"}})).offline);
    EXPECT_FALSE(
        hub_settings_from_environment(table({{"HF_HUB_OFFLINE", "0"}, {"TRANSFORMERS_OFFLINE", "1"}}))
            .offline);
}

TEST(HubCache, NamesAndPaths) {
    EXPECT_TRUE(is_repo_id("PaddlePaddle/PaddleOCR-VL-1.5"));
    for (const char* bad :
         {"PaddleOCR-VL", "a/b/c", "a//b", "a/b--c", "a/..b", "a/-b", "a/b.", "a b/c", "/a", "a/"}) {
        EXPECT_FALSE(is_repo_id(bad)) << bad;
    }
    EXPECT_THROW(check_repo_id("PaddleOCR-VL"), Error);
    EXPECT_TRUE(is_commit_hash("0123456789abcdef0123456789abcdef01234567"));
    EXPECT_FALSE(is_commit_hash("main"));
    EXPECT_FALSE(is_commit_hash("0123456789ABCDEF0123456789abcdef01234567"));
    for (const char* bad : {"../x", "a/../b", "/etc/passwd", "a//b", "", "a/./b", "a\\b"}) {
        EXPECT_THROW(check_repo_path(bad), Error) << bad;
    }
    check_repo_path("PP-DocLayoutV2/inference.yml");

    const HubCache cache("/c");
    EXPECT_EQ(HubCache::folder_name("PaddlePaddle/PaddleOCR-VL"), "models--PaddlePaddle--PaddleOCR-VL");
    EXPECT_EQ(cache.blob_path("o/n", "abc"), "/c/models--o--n/blobs/abc");
    EXPECT_EQ(cache.incomplete_path("o/n", "abc"), "/c/models--o--n/blobs/abc.incomplete");
    EXPECT_EQ(cache.lock_path("o/n", "abc"), "/c/.locks/models--o--n/abc.lock");
    EXPECT_EQ(cache.snapshot_file("o/n", "c0", "a/b.json"), "/c/models--o--n/snapshots/c0/a/b.json");
}

// The HubError (BadResponse) `read` throws; a test failure where it throws nothing or something else.
std::string bad_response(const std::function<void()>& read) {
    try {
        read();
    } catch (const HubError& e) {
        EXPECT_EQ(e.kind(), HubErrorKind::BadResponse) << e.what();
        EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no HubError";
    return "";
}

TEST(HubApi, RevisionCommit) {
    const std::string url = "https://hub/api/models/o/n/revision/main";
    EXPECT_EQ(parse_revision_commit(R"({"sha": ")" + std::string(40, 'a') + R"(", "id": "o/n"})", url),
              std::string(40, 'a'));
    EXPECT_EQ(bad_response([&] { parse_revision_commit(R"({"sha": "main"})", url); }),
              url + ": the answer has no commit hash (\"sha\")");
    EXPECT_EQ(bad_response([&] { parse_revision_commit(R"({"sha": 5})", url); }),
              url + ": the answer has no commit hash (\"sha\")");
    const std::string message = bad_response([&] { parse_revision_commit("<html>", url); });
    EXPECT_TRUE(message.starts_with(url + ": the answer is not valid JSON: line 1, column 1: ")) << message;
    // A number too large for a double, anywhere in the answer.
    const std::string overflow =
        bad_response([&] { parse_revision_commit(R"({"downloads": 1e999, "sha": "x"})", url); });
    EXPECT_EQ(
        overflow,
        url + ": the answer is not valid JSON: line 1, column 15: a number too large for a double: 1e999");
}

TEST(HubApi, TreePageChecksEveryEntry) {
    const std::string url = "https://hub/api/models/o/n/tree/c?recursive=true";
    const std::string oid(40, '1');
    const std::string sha256(64, 'f');
    const std::vector<TreeEntry> entries = parse_tree_page(
        R"([{"type": "directory", "path": "sub", "oid": "x", "size": 0},
            {"type": "file", "path": "config.json", "oid": ")" +
            oid + R"(", "size": 10},
            {"type": "file", "path": "sub/model.safetensors", "oid": ")" +
            oid + R"(", "size": 135,
             "lfs": {"oid": ")" +
            sha256 + R"(", "size": 4096}, "xetHash": "xh"}])",
        url);
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0].path, "config.json");
    EXPECT_EQ(entries[0].size, 10);
    EXPECT_EQ(entries[1].blob_name(), sha256);
    EXPECT_EQ(entries[1].lfs_size, 4096);
    EXPECT_EQ(entries[1].xet_hash, "xh");

    const auto file = [&](const std::string& fields) {
        return R"([{"type": "file", "path": "a.json", "oid": ")" + oid + "\", " + fields + "}]";
    };
    EXPECT_NE(bad_response([&] {
                  parse_tree_page(file(R"("size": 1e300)"), url);
              }).find("\"size\" must be a non-negative integer"),
              std::string::npos);
    EXPECT_NE(bad_response([&] {
                  parse_tree_page(file(R"("size": 18446744073709551615)"), url);
              }).find("\"size\" must be a non-negative integer"),
              std::string::npos);
    EXPECT_NE(bad_response([&] {
                  parse_tree_page(file(R"("size": "10")"), url);
              }).find("\"size\" must be a non-negative integer"),
              std::string::npos);
    EXPECT_NE(bad_response([&] {
                  parse_tree_page(file(R"("size": 1, "lfs": {"oid": 3})"), url);
              }).find("\"oid\" must be a string"),
              std::string::npos);
    EXPECT_NE(bad_response([&] {
                  parse_tree_page(file(R"("size": 1, "lfs": {"oid": ")" + sha256 + R"(", "size": -1})"), url);
              }).find("\"size\" must be a non-negative integer"),
              std::string::npos);
    EXPECT_NE(bad_response([&] {
                  parse_tree_page(R"([{"type": "file", "path": "../x", "oid": ")" + oid + R"(", "size": 1}])",
                                  url);
              }).find("is not a file path inside a repository"),
              std::string::npos);
    EXPECT_NE(bad_response([&] {
                  parse_tree_page(R"([{"type": "file", "path": "a", "oid": "nohash", "size": 1}])", url);
              }).find("its oid is not a hash"),
              std::string::npos);
    EXPECT_EQ(bad_response([&] { parse_tree_page("[3]", url); }),
              url + ": a file entry the Hub would not send (not an object): number 3");
    EXPECT_EQ(bad_response([&] { parse_tree_page("{}", url); }),
              url + ": the answer is not a JSON array of files");
}

TEST(HubApi, ErrorMessage) {
    EXPECT_EQ(hub_error_message(R"({"error": "Repository not found"})"), "Repository not found");
    EXPECT_EQ(hub_error_message(R"({"error": 404})"), "");
    EXPECT_EQ(hub_error_message("<html>Bad gateway</html>"), "");
    EXPECT_EQ(hub_error_message(R"({"error": "x", "n": 1e999})"), "");
}

TEST(HubCache, DamagedListingsAreFetchedAgain) {
    const std::string oid(40, '1');
    const auto listing = [&](const std::string& info) {
        return R"({"format_version": 1, "files": {"a.json": )" + info + "}}";
    };
    const auto read = parse_cached_tree(listing(R"({"size": 5, "blob_id": ")" + oid + R"("})"));
    ASSERT_TRUE(read);
    EXPECT_EQ(read->at(0).size, 5);
    EXPECT_FALSE(parse_cached_tree(listing(R"({"size": 1e300, "blob_id": ")" + oid + R"("})")));
    EXPECT_FALSE(parse_cached_tree(listing(R"({"size": -1, "blob_id": ")" + oid + R"("})")));
    EXPECT_FALSE(parse_cached_tree(listing(R"({"size": 5, "blob_id": 7})")));
    EXPECT_FALSE(parse_cached_tree(listing(R"({"size": 5, "blob_id": ")" + oid + R"(", "lfs_sha256": ")" +
                                           std::string(64, 'f') + R"(", "lfs_size": "x"})")));
    EXPECT_FALSE(parse_cached_tree(listing("[]")));
    EXPECT_FALSE(parse_cached_tree(R"({"format_version": 1e999, "files": {}})"));
    EXPECT_FALSE(parse_cached_tree(R"({"format_version": 1.0, "files": {}})"));
    EXPECT_FALSE(parse_cached_tree("{"));
}

TEST(HubCache, RefsListingsAndLinks) {
    TempDir dir;
    const HubCache cache(dir.path());
    const std::string commit(40, 'a');
    EXPECT_FALSE(cache.read_ref("o/n", "main"));
    cache.write_ref("o/n", "main", commit);
    cache.write_ref("o/n", "refs/pr/1", commit);
    EXPECT_EQ(cache.read_ref("o/n", "main"), commit);
    EXPECT_EQ(cache.read_ref("o/n", "refs/pr/1"), commit);
    write(cache.repo_dir("o/n") / "refs" / "broken", "not a commit");
    EXPECT_FALSE(cache.read_ref("o/n", "broken"));
    EXPECT_FALSE(cache.resolve_revision("o/n", "main"));  // no snapshot yet

    std::vector<TreeEntry> entries(2);
    entries[0] = {"config.json", 10, std::string(40, '1'), std::nullopt, 0, std::nullopt};
    entries[1] = {"sub/model.safetensors", 100, std::string(40, '2'), std::string(64, 'f'), 100, "xet"};
    cache.write_tree("o/n", commit, entries);
    const auto read = cache.read_tree("o/n", commit);
    ASSERT_TRUE(read);
    ASSERT_EQ(read->size(), 2u);
    EXPECT_EQ((*read)[1].path, "sub/model.safetensors");
    EXPECT_EQ((*read)[1].blob_name(), std::string(64, 'f'));
    EXPECT_EQ((*read)[1].xet_hash, "xet");
    EXPECT_EQ((*read)[0].blob_name(), std::string(40, '1'));
    write(cache.repo_dir("o/n") / "trees" / (std::string(40, 'b') + ".json"), "{\"format_version\": 9}");
    EXPECT_FALSE(cache.read_tree("o/n", std::string(40, 'b')));

    write(cache.blob_path("o/n", std::string(64, 'f')), std::string(100, 'x'));
    cache.link_file("o/n", commit, "sub/model.safetensors", std::string(64, 'f'));
    EXPECT_EQ(fs::read_symlink(cache.snapshot_file("o/n", commit, "sub/model.safetensors")).string(),
              "../../../blobs/" + std::string(64, 'f'));
    EXPECT_TRUE(cache.has_file("o/n", commit, "sub/model.safetensors"));
    cache.link_file("o/n", commit, "config.json", std::string(40, '1'));  // its blob is not there
    EXPECT_FALSE(cache.has_file("o/n", commit, "config.json"));
    EXPECT_EQ(cache.resolve_revision("o/n", "main"), commit);
    EXPECT_EQ(cache.resolve_revision("o/n", commit), commit);
    EXPECT_FALSE(cache.resolve_revision("o/n", "v2"));

    const auto repos = cache.list();
    ASSERT_EQ(repos.size(), 1u);
    EXPECT_EQ(repos[0].repo, "o/n");
    ASSERT_EQ(repos[0].snapshots.size(), 1u);
    EXPECT_EQ(repos[0].snapshots[0].refs, (std::vector<std::string>{"main", "refs/pr/1"}));
    EXPECT_EQ(repos[0].snapshots[0].bytes, 100);
    EXPECT_EQ(repos[0].snapshots[0].n_files, 2);
    EXPECT_EQ(repos[0].snapshots[0].n_missing, 1);
}

TEST(HubCache, RemovingASnapshotKeepsTheBlobsOthersLink) {
    TempDir dir;
    const HubCache cache(dir.path());
    const std::string c1(40, '1'), c2(40, '2'), shared(64, 'a'), only1(64, 'b');
    write(cache.blob_path("o/n", shared), "shared");
    write(cache.blob_path("o/n", only1), "only in c1");
    cache.link_file("o/n", c1, "config.json", shared);
    cache.link_file("o/n", c1, "model.safetensors", only1);
    cache.link_file("o/n", c2, "config.json", shared);
    cache.write_ref("o/n", "v1", c1);
    cache.write_ref("o/n", "main", c2);
    // The only snapshot left resolves "main" even without its ref.
    EXPECT_EQ(cache.remove_snapshot("o/n", c1), 10);
    EXPECT_TRUE(fs::exists(cache.blob_path("o/n", shared)));
    EXPECT_FALSE(fs::exists(cache.blob_path("o/n", only1)));
    EXPECT_FALSE(cache.read_ref("o/n", "v1"));
    EXPECT_EQ(cache.read_ref("o/n", "main"), c2);
    EXPECT_THROW(cache.remove_snapshot("o/n", c1), Error);
    EXPECT_EQ(cache.remove_repo("o/n"), 6);
    EXPECT_FALSE(fs::exists(cache.repo_dir("o/n")));
    EXPECT_TRUE(cache.list().empty());
}

TEST(BlobHash, ShaAndGitBlobIds) {
    TempDir dir;
    write(dir / "hello", "hello\n");
    EXPECT_EQ(hash_file(dir / "hello", BlobHashKind::Sha256),
              "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
    // git hash-object of the same content.
    EXPECT_EQ(hash_file(dir / "hello", BlobHashKind::GitSha1), "ce013625030ba8dba906f756967f9e9ca394464a");
    EXPECT_EQ(blob_hash_kind(std::string(64, 'a')), BlobHashKind::Sha256);
    EXPECT_EQ(blob_hash_kind(std::string(40, '0')), BlobHashKind::GitSha1);
    EXPECT_FALSE(blob_hash_kind("d41d8cd98f00b204e9800998ecf8427e"));
    EXPECT_FALSE(blob_hash_kind(std::string(64, 'A')));
}

TEST(FolderCheck, AcceptsTheFixtureModel) {
    const FolderCheck check = check_model_folder(kTinyModel);
    EXPECT_TRUE(check.ok()) << joined(check.problems);
    EXPECT_EQ(check.kind, ModelKind::Recognition);
    EXPECT_EQ(check.n_files, 8);
}

TEST(FolderCheck, NamesWhatIsMissingOrBroken) {
    TempDir dir;
    FolderCheck check = check_model_folder(dir / "nothing");
    EXPECT_EQ(joined(check.problems), "does not exist\n");

    write(dir / "m" / "config.json", "{\"model_type\": ");
    check = check_model_folder(dir / "m");
    EXPECT_EQ(
        joined(check.problems),
        "tokenizer.json or tokenizer.model is missing (the tokenizer)\n"
        "model.safetensors or model.safetensors.index.json is missing (the weights)\n"
        "config.json is not valid JSON: line 1, column 16: unexpected end of input; expected '[', '{', or a "
        "literal\n");

    write_model(dir / "m");
    write(dir / "m" / "preprocessor_config.json", "[1, 2]");
    write(dir / "m" / "tokenizer.model", "");
    write(dir / "m" / "model.safetensors", test::raw_safetensors("{\"w\": {\"dtype\": \"F32\"}}", 4));
    check = check_model_folder(dir / "m");
    ASSERT_EQ(check.problems.size(), 3u) << joined(check.problems);
    EXPECT_EQ(check.problems[0], "preprocessor_config.json must be a JSON object, is array");
    EXPECT_EQ(check.problems[1], "tokenizer.model is empty");
    EXPECT_NE(check.problems[2].find("model.safetensors"), std::string::npos) << check.problems[2];
    EXPECT_NE(check.problems[2].find("no shape"), std::string::npos) << check.problems[2];
    EXPECT_EQ(check.message().find((dir / "m").string() + ": preprocessor_config.json"), 0u)
        << check.message();

    // With the tokenizer in another folder, the folder needs none.
    write_model(dir / "t");
    fs::remove(dir / "t" / "tokenizer.model");
    FolderCheckOptions elsewhere;
    elsewhere.tokenizer_elsewhere = true;
    EXPECT_TRUE(check_model_folder(dir / "t", elsewhere).ok());
    EXPECT_FALSE(check_model_folder(dir / "t").ok());
}

TEST(FolderCheck, ChecksShardsOfAnIndex) {
    TempDir dir;
    write_model(dir / "m");
    fs::remove(dir / "m" / "model.safetensors");
    test::write_safetensors(dir / "m" / "model-00001-of-00002.safetensors",
                            {test::make_tensor("a", "F32", {1}, std::vector<float>{1})});
    write(
        dir / "m" / "model.safetensors.index.json",
        R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})");
    FolderCheck check = check_model_folder(dir / "m");
    EXPECT_EQ(joined(check.problems),
              "model-00002-of-00002.safetensors (listed in model.safetensors.index.json) is missing\n");
    test::write_safetensors(dir / "m" / "model-00002-of-00002.safetensors",
                            {test::make_tensor("b", "F32", {1}, std::vector<float>{2})});
    check = check_model_folder(dir / "m");
    EXPECT_TRUE(check.ok()) << joined(check.problems);
}

TEST(FolderCheck, LayoutModelsNeedTheirPreprocessing) {
    TempDir dir;
    write(dir / "l" / "config.json", R"({"model_type": "pp_doclayout_v3"})");
    test::write_safetensors(dir / "l" / "model.safetensors",
                            {test::make_tensor("w", "F32", {1}, std::vector<float>{1})});
    EXPECT_EQ(detect_model_kind(dir / "l"), ModelKind::Layout);
    FolderCheck check = check_model_folder(dir / "l");
    EXPECT_EQ(check.kind, ModelKind::Layout);
    EXPECT_EQ(joined(check.problems),
              "preprocessor_config.json is missing (the image preprocessing configuration)\n");
    write(dir / "l" / "preprocessor_config.json", "{}");
    EXPECT_TRUE(check_model_folder(dir / "l").ok());
}

TEST(FolderCheck, ASnapshotMatchesItsListingAndItsHashes) {
    TempDir dir;
    const HubCache cache(dir.path());
    const std::string commit(40, 'c');
    const std::string config = R"({"model_type": "paddleocr_vl"})";
    const std::string tokenizer = "sentencepiece";
    const std::string weights =
        test::safetensors_image({test::make_tensor("w", "F32", {2}, std::vector<float>{1, 2})});
    std::vector<TreeEntry> listing;
    for (const auto& [path, content, lfs] :
         std::vector<std::tuple<std::string, std::string, bool>>{{"config.json", config, false},
                                                                 {"tokenizer.model", tokenizer, true},
                                                                 {"model.safetensors", weights, true}}) {
        write(dir / "tmp", content);
        TreeEntry entry;
        entry.path = path;
        entry.size = static_cast<int64_t>(content.size());
        entry.blob_id = hash_file(dir / "tmp", BlobHashKind::GitSha1);
        if (lfs) {
            entry.lfs_sha256 = hash_file(dir / "tmp", BlobHashKind::Sha256);
        }
        write(cache.blob_path("o/n", entry.blob_name()), content);
        cache.link_file("o/n", commit, path, entry.blob_name());
        listing.push_back(entry);
    }
    listing.push_back({"README.md", 5, std::string(40, 'e'), std::nullopt, 0, std::nullopt});
    FolderCheckOptions options;
    options.listing = &listing;
    options.patterns = fetch_patterns(ModelKind::Recognition);
    options.hash_blobs = true;
    FolderCheck check = check_model_folder(cache.snapshot_dir("o/n", commit), options);
    EXPECT_TRUE(check.ok()) << joined(check.problems);
    EXPECT_EQ(check.n_hashed, 3);

    // A changed byte, a short file, a missing blob.
    const std::string tokenizer_blob = listing[1].blob_name();
    write(cache.blob_path("o/n", tokenizer_blob), "sentencepiecX");
    write(cache.blob_path("o/n", listing[0].blob_name()), "{}");
    fs::remove(cache.blob_path("o/n", listing[2].blob_name()));
    check = check_model_folder(cache.snapshot_dir("o/n", commit), options);
    const std::string problems = joined(check.problems);
    EXPECT_NE(problems.find("model.safetensors links to ../../blobs/" + listing[2].blob_name() +
                            ", which is missing (a removed or unfinished download)"),
              std::string::npos)
        << problems;
    EXPECT_NE(problems.find("config.json has 2 bytes, the repository lists " + std::to_string(config.size())),
              std::string::npos)
        << problems;
    EXPECT_NE(problems.find("tokenizer.model is damaged: its sha256 is "), std::string::npos) << problems;
    EXPECT_NE(problems.find("its blob's name says " + tokenizer_blob), std::string::npos) << problems;
}

TEST(ModelLocator, FoldersAndRepositoriesOnDisk) {
    TempDir dir;
    HubSettings settings;
    settings.cache_dir = dir / "hub";
    settings.models_dir = dir / "models";

    LocatedModel model = locate_model(kTinyModel.string(), settings);
    EXPECT_EQ(model.source, ModelSource::Folder);
    EXPECT_EQ(model.dir, kTinyModel);
    EXPECT_EQ(model.kind, ModelKind::Recognition);
    EXPECT_TRUE(model.repo.empty());

    // A repository in the Hugging Face cache, found by name in any case; its snapshot folder given as a
    // folder still knows its repository, so the catalogue's layout pairing holds.
    const HubCache cache(settings.cache_dir);
    const std::string commit(40, '5');
    write_model(dir / "blobs-src");
    for (const char* file : {"config.json", "tokenizer.model", "model.safetensors"}) {
        const std::string blob = hash_file(dir / "blobs-src" / file, BlobHashKind::Sha256);
        fs::create_directories(cache.blob_path("PaddlePaddle/PaddleOCR-VL-1.5", blob).parent_path());
        fs::copy_file(dir / "blobs-src" / file, cache.blob_path("PaddlePaddle/PaddleOCR-VL-1.5", blob));
        cache.link_file("PaddlePaddle/PaddleOCR-VL-1.5", commit, file, blob);
    }
    cache.write_ref("PaddlePaddle/PaddleOCR-VL-1.5", "main", commit);
    model = locate_model("paddlepaddle/paddleocr-vl-1.5", settings);
    EXPECT_EQ(model.source, ModelSource::HubCache);
    EXPECT_EQ(model.repo, "PaddlePaddle/PaddleOCR-VL-1.5");
    EXPECT_EQ(model.commit, commit);
    EXPECT_EQ(paired_layout_repo(model), "PaddlePaddle/PP-DocLayoutV3_safetensors");
    const LocatedModel by_folder = locate_model(model.dir.string(), settings);
    EXPECT_EQ(by_folder.source, ModelSource::Folder);
    EXPECT_EQ(by_folder.repo, "PaddlePaddle/PaddleOCR-VL-1.5");
    EXPECT_EQ(by_folder.commit, commit);
    EXPECT_NE(model.description().find("PaddlePaddle/PaddleOCR-VL-1.5 at 5555555 in the Hugging Face cache"),
              std::string::npos)
        << model.description();

    // Folio's models folder: plain ORG/NAME folders.
    write_model(settings.models_dir / "someone" / "my-ocr");
    model = locate_model("someone/my-ocr", settings);
    EXPECT_EQ(model.source, ModelSource::ModelsFolder);
    EXPECT_EQ(model.dir, settings.models_dir / "someone" / "my-ocr");
    EXPECT_FALSE(paired_layout_repo(model));

    // Found but broken: the message names the model, the problem and the way out.
    fs::remove(settings.models_dir / "someone" / "my-ocr" / "tokenizer.model");
    try {
        locate_model("someone/my-ocr", settings);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("someone/my-ocr in the models folder"), std::string::npos)
            << e.what();
        EXPECT_NE(
            std::string(e.what()).find("is not a usable recognition model: tokenizer.json or tokenizer.model "
                                       "is missing (the tokenizer)"),
            std::string::npos)
            << e.what();
    }
    try {
        locate_model("PaddlePaddle/PaddleOCR-VL", settings);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("PaddlePaddle/PaddleOCR-VL is not on this computer"),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("folio-cli model pull PaddlePaddle/PaddleOCR-VL"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(locate_model("no/such/folder", settings), Error);
}

}  // namespace
}  // namespace folio::hub
