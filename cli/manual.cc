#include "manual.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "trace_error.h"

namespace fsrr::cli {
namespace {

// The commands a page each: hidden ones (group "") are the build's; help is fsrr(1)'s.
std::vector<const CLI::App*> visible_commands(const CLI::App& root) {
  std::vector<const CLI::App*> out;
  for (const CLI::App* sub : root.get_subcommands({}))
    if (!sub->get_group().empty() && sub->get_name() != "help") out.push_back(sub);
  return out;
}

bool is_help(const CLI::Option* opt) { return opt->get_lnames() == std::vector<std::string>{"help"}; }

bool is_flag(const CLI::Option* opt) { return opt->get_items_expected_max() == 0; }

// roff text: backslashes escaped, hyphens as \- (so they copy as ASCII), other than ASCII as
// \[uXXXX], no line starting with a control character.
std::string roff(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80) {  // UTF-8 (the guides' arrows and dashes) as groff's \[uXXXX]
      const int more = byte >= 0xf0 ? 3 : byte >= 0xe0 ? 2 : 1;
      uint32_t cp = byte & (0x3f >> more);
      for (int k = 0; k < more && i + 1 < text.size(); ++k)
        cp = cp << 6 | (static_cast<unsigned char>(text[++i]) & 0x3f);
      out += fmt::format("\\[u{:04X}]", cp);
    } else if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
    line_start = c == '\n';
  }
  return out;
}

// "TEXT:{faithful,think,afap}" -> {"faithful", "think", "afap"}
std::vector<std::string> choices_of(const CLI::Option* opt) {
  const std::string type = opt->get_type_name();
  const size_t open = type.find('{'), close = type.rfind('}');
  std::vector<std::string> out;
  if (open == std::string::npos || close == std::string::npos || close < open) return out;
  const std::string list = type.substr(open + 1, close - open - 1);
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    if (comma > at) out.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

// What an option's value is called: its choices, N or X for numbers, DIR or FILE when its help
// starts so, else its long name in capitals (--fs FS).
std::string value_name(const CLI::Option* opt) {
  const auto choices = choices_of(opt);
  if (!choices.empty()) return fmt::format("{}", fmt::join(choices, "|"));
  std::string type = opt->get_type_name();
  type = type.substr(0, type.find(':'));
  if (type == "UINT" || type == "INT") return "N";
  if (type == "FLOAT") return "X";
  const std::string& help = opt->get_description();
  if (help.starts_with("Directory")) return "DIR";
  if (help.starts_with("Trace file") || help.starts_with("File")) return "FILE";
  std::string name = opt->get_lnames().empty() ? "VALUE" : opt->get_lnames().front();
  std::transform(name.begin(), name.end(), name.begin(), ::toupper);
  return name;
}

std::string option_names(const CLI::Option* opt) {
  std::vector<std::string> names;
  for (const auto& s : opt->get_snames()) names.push_back("\\fB\\-" + s + "\\fR");
  for (const auto& l : opt->get_lnames()) names.push_back("\\fB\\-\\-" + roff(l) + "\\fR");
  std::string out = fmt::format("{}", fmt::join(names, ", "));
  if (!is_flag(opt)) out += " \\fI" + roff(value_name(opt)) + "\\fR";
  if (opt->get_expected_max() > 1) out += " ...";
  return out;
}

// A sentence: `text` with a full stop, unless it has one.
std::string sentence(const std::string& text) {
  return text.ends_with('.') ? text : text + ".";
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), ::toupper);
  return s;
}

std::string synopsis(const CLI::App& sub) {
  std::string out = "\\fBfsrr " + sub.get_name() + "\\fR [\\fIOPTIONS\\fR]";
  for (const CLI::Option* opt : sub.get_options()) {
    if (!opt->get_positional()) continue;
    const std::string pname = opt->get_name(true);
    std::string name;
    if (opt->get_expected_max() > 1 && pname == upper(pname))
      name = "\\fI" + roff(pname) + "\\fR ...";  // FILE ...
    else if (opt->get_expected_max() > 1)  // the command after "--" (record, minimize)
      name = "\\fB\\-\\-\\fR \\fI" + roff(upper(pname)) + "\\fR [\\fIARGS\\fR ...]";
    else
      name = "\\fI" + roff(pname) + "\\fR";
    out += " " + (opt->get_required() ? name : "[" + name + "]");
  }
  return out;
}

// Where a guide's link leads, as a man page names it: a command's page, a file of the
// installed documentation, or the address itself.
std::string link_reference(const std::string& target) {
  const std::string file = target.substr(0, target.find('#'));
  if (file.empty()) return {};
  if (!file.ends_with(".md")) return file;
  if (file.find('/') == std::string::npos)  // a command's guide beside this one
    return "fsrr-" + file.substr(0, file.size() - 3) + "(1)";
  std::string path = file;
  while (path.starts_with("../")) path = path.substr(3);
  return file.starts_with("../../") ? path : "docs/" + path;
}

// Inline markdown as roff: `code` and **strong** in bold, [text](link) as its text and where
// it leads.
std::string inline_roff(const std::string& md) {
  std::string out;
  for (size_t i = 0; i < md.size();) {
    if (md[i] == '`') {
      const size_t end = md.find('`', i + 1);
      if (end != std::string::npos) {
        out += "\\fB" + roff(md.substr(i + 1, end - i - 1)) + "\\fR";
        i = end + 1;
        continue;
      }
    } else if (md.compare(i, 2, "**") == 0) {
      const size_t end = md.find("**", i + 2);
      if (end != std::string::npos) {
        out += "\\fB" + inline_roff(md.substr(i + 2, end - i - 2)) + "\\fR";
        i = end + 2;
        continue;
      }
    } else if (md[i] == '[') {
      const size_t close = md.find("](", i);
      const size_t end = close == std::string::npos ? close : md.find(')', close);
      if (end != std::string::npos && md.find('\n', i) > end) {
        out += inline_roff(md.substr(i + 1, close - i - 1));
        const std::string ref = link_reference(md.substr(close + 2, end - close - 2));
        if (!ref.empty()) out += " (" + roff(ref) + ")";
        i = end + 1;
        continue;
      }
    }
    const size_t next = std::min({md.find('`', i + 1), md.find("**", i + 1), md.find('[', i + 1),
                                  md.size()});
    out += roff(md.substr(i, next - i));
    i = next;
  }
  // a line of the joined paragraph must not start with a control character
  std::string safe;
  for (size_t i = 0; i < out.size(); ++i) {
    if ((i == 0 || out[i - 1] == '\n') && (out[i] == '.' || out[i] == '\'')) safe += "\\&";
    safe += out[i];
  }
  return safe;
}

// A command's guide (docs/commands/NAME.md) as man page text: the opening paragraphs become
// the DESCRIPTION, each "## Section" but Options (the CLI's own list replaces it) a
// subsection; paragraphs, lists, examples and tables as man(7) has them.
// A markdown table as preformatted text: columns padded to one width, the rule under the
// head a line of dashes.
std::string table_roff(const std::vector<std::string>& rows) {
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> width;
  // a cell as the aligned table shows it: no backticks
  auto plain = [](const std::string& s) {
    std::string out;
    for (char c : s)
      if (c != '`') out += c;
    return out;
  };
  auto length = [&](const std::string& s) {  // in characters, not UTF-8 bytes
    const std::string p = plain(s);
    return static_cast<size_t>(std::count_if(
        p.begin(), p.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
  };
  for (const std::string& row : rows) {
    std::vector<std::string> r;
    if (row.find_first_not_of("|-: ") == std::string::npos) {  // the rule
      cells.push_back(r);
      continue;
    }
    size_t at = 1;
    while (at < row.size()) {
      const size_t bar = std::min(row.find(" |", at), row.size());
      std::string cell;
      cell = row.substr(at, bar - at);
      cell.erase(0, cell.find_first_not_of(' '));
      r.push_back(cell);
      at = bar + 2;
    }
    if (width.size() < r.size()) width.resize(r.size());
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], length(r[i]));
    cells.push_back(std::move(r));
  }
  size_t total = 0;
  for (const size_t w : width) total += w + 2;
  if (total > 80 && cells.size() > 2 && cells[1].empty()) {
    // too wide for a terminal: a tagged paragraph a row, its other cells named by the head
    std::string out;
    const std::vector<std::string>& head = cells[0];
    for (size_t r = 2; r < cells.size(); ++r) {
      const auto& row = cells[r];
      if (row.empty()) continue;
      out += ".TP\n\\fB" + inline_roff(row[0]) + "\\fR\n";
      std::vector<std::string> parts;
      for (size_t i = 1; i < row.size(); ++i) {
        if (row[i].empty() || row[i] == "\u2014") continue;
        parts.push_back(head.size() > 2 && i < head.size() ? head[i] + ": " + row[i] : row[i]);
      }
      out += inline_roff(fmt::format("{}", fmt::join(parts, "; "))) + "\n";
    }
    return out;
  }
  std::string out = ".PP\n.RS 2\n.nf\n";
  for (const auto& r : cells) {
    std::string line;
    if (r.empty()) {
      for (size_t i = 0; i < width.size(); ++i) line += std::string(width[i], '-') + "  ";
    } else {
      for (size_t i = 0; i < r.size(); ++i)
        line += plain(r[i]) + (i + 1 < r.size() ? std::string(width[i] - length(r[i]) + 2, ' ') : "");
    }
    while (line.ends_with(' ')) line.pop_back();
    out += roff(line) + "\n";
  }
  return out + ".fi\n.RE\n";
}

// An example's line as a terminal of 100 columns shows it within the page's indent: cut at
// the last space (or after the last comma) before 90 characters, the rest indented 4 more
// (tables of output included: better folded at a column than cut mid-word by the terminal).
std::vector<std::string> fold(const std::string& line) {
  constexpr size_t width = 90;
  std::vector<std::string> out;
  std::string rest = line;
  const size_t indent = std::min(line.find_first_not_of(' '), line.size()) + 4;
  while (rest.size() > width) {
    // after the last space, or comma (JSON Lines have no spaces), before the width
    size_t cut = rest.find_last_of(" ,", width - 1);
    if (cut == std::string::npos || cut <= indent) cut = rest.find_first_of(" ,", width);
    if (cut == std::string::npos) break;
    if (rest[cut] == ',') ++cut;
    out.push_back(rest.substr(0, cut));
    const size_t next = rest.find_first_not_of(' ', cut);
    if (next == std::string::npos) {
      rest.clear();
      break;
    }
    rest = std::string(indent, ' ') + rest.substr(next);
  }
  if (!rest.empty() || out.empty()) out.push_back(rest);
  return out;
}

struct guide_text {
  std::string description, sections;
};

guide_text guide_roff(const std::string& markdown) {
  guide_text out;
  std::string* to = &out.description;
  std::istringstream in(markdown);
  std::string line, para;
  bool skip = false, first_block = true, seen_heading = false;
  auto flush = [&] {
    if (!para.empty() && !skip) *to += inline_roff(para) + "\n";
    para.clear();
  };
  while (std::getline(in, line)) {
    if (line.starts_with("```")) {
      flush();
      std::string block;
      while (std::getline(in, line) && !line.starts_with("```"))
        for (const std::string& part : fold(line)) block += roff(part) + "\n";
      // the synopsis block under the title: the man page has its own SYNOPSIS
      if (!skip && !(first_block && !seen_heading))
        *to += ".PP\n.RS 2\n.nf\n" + block + ".fi\n.RE\n";
      first_block = false;
      continue;
    }
    if (line.starts_with("# ")) continue;  // the title: the man page's NAME
    if (line.starts_with("## ")) {
      flush();
      seen_heading = true;
      const std::string title = line.substr(3);
      skip = title == "Options";
      to = &out.sections;
      if (!skip) *to += ".SS " + inline_roff(title) + "\n";
      continue;
    }
    if (line.starts_with("|")) {  // a table: its rows, columns aligned
      flush();
      std::vector<std::string> rows{line};
      while (in.peek() == '|' && std::getline(in, line)) rows.push_back(line);
      if (!skip) *to += table_roff(rows);
      continue;
    }
    if (line.empty()) {
      flush();
      continue;
    }
    if (line.starts_with("- ") || (line.size() > 2 && std::isdigit(static_cast<unsigned char>(line[0])) &&
                                   line.starts_with(line.substr(0, line.find(". ")) + ". ") &&
                                   line.find(". ") < 4)) {
      flush();
      const size_t text = line.find(' ') + 1;
      if (!skip) *to += line[0] == '-' ? ".IP \\(bu 2\n" : ".IP " + line.substr(0, text - 1) + " 4\n";
      para = line.substr(text);
      continue;
    }
    if (para.empty() && !skip) *to += ".PP\n";
    para += para.empty() ? line.substr(line.find_first_not_of(' ')) : "\n" + line.substr(line.find_first_not_of(' '));
  }
  flush();
  return out;
}

std::string header(const std::string& title, const std::string& version) {
  return fmt::format(".TH {} 1 \"\" \"fsrr {}\" \"fsrr manual\"\n", roff(title), roff(version));
}

const char* exit_status =
    "0 on success; 1 when fsrr failed, with one line on standard error saying why; 2 on a usage "
    "error. record exits with the recorded command's own status, or 126/127 when it cannot be "
    "run or found and 125 when fsrr itself fails (as env, timeout and nice do). compare exits 3 "
    "when a row got slower than its --baseline beyond the spread of its runs; crashtest exits 4 "
    "when a power cut lost what a file system had promised, or left it unmountable or unsound.";

std::string root_page(const CLI::App& root, const std::string& version) {
  std::string out = header("FSRR", version);
  out += ".SH NAME\nfsrr \\- record a program's file\\-system activity with eBPF and replay it "
         "on any file system\n";
  out += ".SH SYNOPSIS\n\\fBfsrr\\fR \\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]\n.br\n"
         "\\fBfsrr help\\fR [\\fICOMMAND\\fR]\n.br\n\\fBfsrr \\-\\-version\\fR\n";
  out += ".SH DESCRIPTION\n" + roff(root.get_description()) + ".\n";
  out += ".PP\nA trace holds every file\\-system syscall of the recorded processes (thread, "
         "time, duration, result, file, offset, size, flags) and the initial state of every "
         "file they touched, never file contents. replay recreates that tree beneath a target "
         "directory and re\\-issues the operations, from generated data, with the recorded "
         "timing; compare does so on file systems it makes itself and shows them side by "
         "side; crashtest cuts the power after each op that promised durability and checks "
         "what survived.\n";
  out += ".SH COMMANDS\n";
  for (const CLI::App* sub : visible_commands(root))
    out += fmt::format(".TP\n\\fBfsrr {}\\fR\n{} See \\fBfsrr\\-{}\\fR(1).\n", sub->get_name(),
                       roff(sentence(sub->get_description())), sub->get_name());
  out += ".SH EXIT STATUS\n" + roff(exit_status) + "\n";
  out += ".SH FILES\n.TP\n\\fI/usr/share/fsrr/traces/\\fR\nTraces shipped with fsrr: an "
         "rsync \\-aAHX copy of a seed tree, and that tree alone.\n";
  out += ".SH SEE ALSO\n";
  std::vector<std::string> refs;
  for (const CLI::App* sub : visible_commands(root))
    refs.push_back("\\fBfsrr\\-" + sub->get_name() + "\\fR(1)");
  out += fmt::format("{}\n", fmt::join(refs, ", "));
  out += ".PP\nThe guides in \\fI/usr/share/doc/fsrr/\\fR: README.md, docs/design.md (the "
         "trace format and the JSON keys), one page per command in docs/commands/.\n";
  return out;
}

std::string command_page(const CLI::App& sub, const std::string& version,
                         const std::string& guide) {
  const guide_text text = guide_roff(guide);
  const std::string name = "fsrr-" + sub.get_name();
  std::string out = header(upper(name), version);
  const std::string summary = sub.get_description();
  // the NAME line: the description's first clause or sentence
  const size_t cut = std::min(summary.find(": "), summary.find(". "));
  out += ".SH NAME\n" + roff(name) + " \\- " + roff(summary.substr(0, cut)) + "\n";
  out += ".SH SYNOPSIS\n" + synopsis(sub) + "\n";
  out += ".SH DESCRIPTION\n" +
         (text.description.empty() ? roff(sentence(summary)) + "\n" : text.description) +
         text.sections;
  std::string args, options;
  for (const CLI::Option* opt : sub.get_options()) {
    if (is_help(opt)) continue;
    std::string text = opt->get_description();
    if (!opt->get_default_str().empty() && !is_flag(opt))
      text += fmt::format(" (default: {})", opt->get_default_str());
    if (opt->get_positional())
      args += ".TP\n\\fI" + roff(opt->get_name(true)) + "\\fR\n" + roff(text) + "\n";
    else
      options += ".TP\n" + option_names(opt) + "\n" + roff(text) + "\n";
  }
  if (!args.empty()) out += ".SH ARGUMENTS\n" + args;
  out += ".SH OPTIONS\n" + options + ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nPrint this "
         "command's options and exit.\n";
  if (!sub.get_footer().empty()) {
    out += ".SH NOTES\n.nf\n";
    std::istringstream footer(sub.get_footer());
    for (std::string line; std::getline(footer, line);)
      for (const std::string& part : fold(line)) out += roff(part) + "\n";
    out += ".fi\n";
  }
  out += ".SH EXIT STATUS\n" + roff(exit_status) + "\n";
  out += fmt::format(".SH SEE ALSO\n\\fBfsrr\\fR(1); \\fI/usr/share/doc/fsrr/docs/commands/{}.md"
                     "\\fR\n",
                     sub.get_name());
  return out;
}

// A bash word list.
std::string words(const std::vector<std::string>& w) { return fmt::format("{}", fmt::join(w, " ")); }

// Values worth offering for options whose help names them but no validator lists them.
std::vector<std::string> known_values(const std::string& option) {
  if (option == "--data") return {"zero", "random", "compress:2", "compress:4"};
  if (option == "--fs" || option == "--source-fs")
    return {"tmpfs", "ext4", "xfs", "btrfs", "btrfs:compress=lzo", "btrfs:compress=zstd", "ext2",
            "ext3"};
  return {};
}

}  // namespace

std::string man_page(const CLI::App& root, const CLI::App* sub, const std::string& version,
                     const std::string& guide) {
  return sub ? command_page(*sub, version, guide) : root_page(root, version);
}

std::string bash_completion(const CLI::App& root) {
  std::vector<std::string> names;
  for (const CLI::App* sub : visible_commands(root)) names.push_back(sub->get_name());
  std::string out =
      "# bash completion for fsrr, written by `fsrr generate-docs` from its command line\n"
      "_fsrr() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} prev j=$COMP_CWORD\n"
      "  # the word at the cursor whole: bash splits --timing=afap, compress:2 and\n"
      "  # btrfs:compress=zstd at each : and =\n"
      "  while ((j > 1)) && [[ $cur == [:=]* || ${COMP_WORDS[j-1]} == *[:=] ]]; do\n"
      "    ((j--)); cur=${COMP_WORDS[j]}$cur\n"
      "  done\n"
      "  prev=${COMP_WORDS[j-1]}\n"
      "  if [[ $cur == -*=* ]]; then prev=${cur%%=*}; cur=${cur#*=}; fi\n"
      "  # bash replaces only what follows the last : or =: offer that part\n"
      "  local cut=${cur%\"${cur##*[:=]}\"}\n"
      "  _fsrr_words \"$cur\" \"$prev\" \"$j\"\n"
      "  [[ -n $cut ]] && COMPREPLY=(\"${COMPREPLY[@]#\"$cut\"}\")\n"
      "}\n"
      "_fsrr_words() {\n"
      "  local cur=$1 prev=$2 j=$3 cmd= i dashes=0\n"
      "  for ((i = 1; i < j; i++)); do\n"
      "    if [[ ${COMP_WORDS[i]} == -- ]]; then dashes=$i; break; fi\n"
      "    [[ -z $cmd && ${COMP_WORDS[i]} != -* ]] && cmd=${COMP_WORDS[i]}\n"
      "  done\n"
      "  if ((dashes)); then  # the recorded command (record, minimize's predicate)\n"
      "    if ((j == dashes + 1)); then mapfile -t COMPREPLY < <(compgen -c -- \"$cur\" | sort -u);\n"
      "    else mapfile -t COMPREPLY < <(compgen -f -- \"$cur\"); fi\n"
      "    return\n"
      "  fi\n"
      "  if [[ -z $cmd ]]; then\n"
      "    COMPREPLY=($(compgen -W \"" +
      words(names) +
      " help --help --version\" -- \"$cur\"))\n"
      "    return\n"
      "  fi\n"
      "  case $cmd in\n"
      "    help) COMPREPLY=($(compgen -W \"" +
      words(names) + "\" -- \"$cur\")) ;;\n";
  for (const CLI::App* sub : visible_commands(root)) {
    std::vector<std::string> opts;
    std::string values;
    std::vector<std::string> files, none;
    bool trace_first = false;
    for (const CLI::Option* opt : sub->get_options()) {
      if (opt->get_positional()) {
        if (opt->get_name(true) == "FILE" || opt->get_name(true) == "FILES") trace_first = true;
        continue;
      }
      std::vector<std::string> spelled;
      for (const auto& s : opt->get_snames()) spelled.push_back("-" + s);
      for (const auto& l : opt->get_lnames()) spelled.push_back("--" + l);
      opts.insert(opts.end(), spelled.begin(), spelled.end());
      if (is_flag(opt)) continue;
      std::vector<std::string> choices = choices_of(opt);
      if (choices.empty() && !opt->get_lnames().empty())
        choices = known_values("--" + opt->get_lnames().front());
      const std::string type = opt->get_type_name();
      if (!choices.empty())
        values += fmt::format("        {}) mapfile -t COMPREPLY < <(compgen -W \"{}\" -- \"$cur\"); return ;;\n",
                              fmt::join(spelled, "|"), words(choices));
      else if (type.starts_with("TEXT"))
        files.insert(files.end(), spelled.begin(), spelled.end());
      else
        none.insert(none.end(), spelled.begin(), spelled.end());
    }
    out += "    " + sub->get_name() + ")\n      case $prev in\n" + values;
    if (!files.empty())
      out += fmt::format("        {}) mapfile -t COMPREPLY < <(compgen -f -- \"$cur\"); return ;;\n",
                         fmt::join(files, "|"));
    if (!none.empty())
      out += fmt::format("        {}) return ;;\n", fmt::join(none, "|"));
    out += "      esac\n";
    out += fmt::format(
        "      if [[ $cur == -* ]]; then mapfile -t COMPREPLY < <(compgen -W \"{}\" -- \"$cur\");\n"
        "      else {}; fi ;;\n",
        words(opts),
        trace_first ? "mapfile -t COMPREPLY < <(compgen -d -- \"$cur\"; compgen -f -X '!*.trace' -- \"$cur\")"
                    : "mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")");
  }
  out +=
      "  esac\n"
      "}\n"
      "complete -o filenames -F _fsrr fsrr\n";
  return out;
}

command add_help(CLI::App& app) {
  auto topic = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("help", "Print the options of a command (of fsrr without one)");
  sub->add_option("COMMAND", *topic, "The command");
  return {sub, [&app, topic] {
            if (topic->empty()) {
              fmt::print("{}", app.help());
              return 0;
            }
            for (const CLI::App* c : visible_commands(app))
              if (c->get_name() == *topic) {
                fmt::print("{}", c->help(app.get_name()));
                return 0;
              }
            throw status_error(2, fmt::format("help: no command {} (fsrr --help lists them)",
                                              *topic));
          }};
}

command add_generate_docs(CLI::App& app, const std::string& version) {
  struct opts {
    std::string man_dir, bash_file, guides;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand("generate-docs", "Write the man pages and bash completion");
  sub->group("");  // the build's command, not listed
  sub->add_option("--man", o->man_dir, "Directory for fsrr.1 and fsrr-COMMAND.1");
  sub->add_option("--bash", o->bash_file, "File for the bash completion script");
  sub->add_option("--guides", o->guides,
                  "Directory of the command guides (docs/commands): their text goes into the pages");
  return {sub, [&app, o, version] {
            auto write = [](const std::string& path, const std::string& text) {
              std::ofstream f(path, std::ios::trunc);
              f << text;
              if (!f.flush()) throw trace_error(fmt::format("cannot write {}", path));
            };
            if (!o->man_dir.empty()) {
              write(o->man_dir + "/fsrr.1", man_page(app, nullptr, version));
              for (const CLI::App* c : visible_commands(app)) {
                std::string guide;
                if (!o->guides.empty()) {
                  const std::string path = o->guides + "/" + c->get_name() + ".md";
                  std::ifstream f(path);
                  if (!f) throw trace_error(fmt::format("cannot read {}", path));
                  guide.assign(std::istreambuf_iterator<char>(f), {});
                }
                write(o->man_dir + "/fsrr-" + c->get_name() + ".1",
                      man_page(app, c, version, guide));
              }
            }
            if (!o->bash_file.empty()) write(o->bash_file, bash_completion(app));
            return 0;
          }};
}

}  // namespace fsrr::cli
