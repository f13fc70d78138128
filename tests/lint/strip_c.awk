# strip_c.awk - print C source as "file:line:code" with comments removed and
# string and character literals emptied, so that the lint greps match code
# only ("the lease time (ms)" in a comment is not a call to time()).
# #include lines keep their quoted file name. Lines left blank are dropped.
# A rough scanner (no trigraphs, no line splices), which is all a grep needs.
# Portable awk (mawk, gawk, busybox).

FNR == 1 { in_block = 0 }

{
    line = $0
    n = length(line)
    code = ""   # literals emptied
    keep = ""   # literals kept, for #include "x.h"
    i = 1
    while (i <= n) {
        c = substr(line, i, 1)
        c2 = substr(line, i, 2)
        if (in_block) {
            if (c2 == "*/") {
                in_block = 0
                code = code " "
                keep = keep " "
                i += 2
            } else {
                i++
            }
            continue
        }
        if (c2 == "//")
            break
        if (c2 == "/*") {
            in_block = 1
            i += 2
            continue
        }
        if (c == "\"" || c == "'") {
            j = i + 1
            while (j <= n) {
                d = substr(line, j, 1)
                if (d == "\\") {
                    j += 2
                    continue
                }
                if (d == c)
                    break
                j++
            }
            keep = keep substr(line, i, j - i + 1)
            code = code c c
            i = j + 1
            continue
        }
        code = code c
        keep = keep c
        i++
    }
    out = (keep ~ /^[ \t]*#[ \t]*include/) ? keep : code
    if (out ~ /[^ \t]/)
        print FILENAME ":" FNR ":" out
}
