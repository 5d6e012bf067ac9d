#!/bin/sh
# Writes the man page (section 1) of one program, made from its --help, as
# docs/tools.md is: the usage line as the synopsis, the first line of the
# help as the name's description, the rest verbatim.
#   sh scripts/gen-man.sh bin/PROGRAM VERSION > PROGRAM.1
prog=$1
version=${2:-}
name=$(basename "$prog")
help=$("$prog" --help) || exit 1
usage=$(printf '%s\n' "$help" | sed -n '1s/^Usage: //p')
summary=$(printf '%s\n' "$help" | sed -n '2p')
# roff: a backslash is written \e; a line starting with . or ' is protected
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
cat <<EOF2
.TH $(printf '%s' "$name" | tr a-z A-Z) 1 "" "asn $version" "asn manual"
.SH NAME
$name \\- $(printf '%s' "$summary" | esc)
.SH SYNOPSIS
.B $name
$(printf '%s' "${usage#"$name "}" | esc)
.SH DESCRIPTION
.nf
$(printf '%s\n' "$help" | sed '1,2d' | esc)
.fi
.SH EXIT STATUS
0 on success, 1 on bad input or a runtime error (the message names the file
and line), 2 on a bad command line.
.SH SEE ALSO
The other asn programs; docs/tools.md of the source tree.
EOF2
