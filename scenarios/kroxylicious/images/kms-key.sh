#!/bin/busybox sh
# Key set-up through the AWS KMS API of the KMS this image runs (local-kms on PORT, default 8080),
# as an operator does it with `aws kms create-key` and `aws kms create-alias`:
#
#   kms-key create ALIAS    a symmetric key for encryption and decryption, named alias/ALIAS
#   kms-key describe ALIAS  the key that alias/ALIAS names
#
# Prints the KMS's answer; on an error the KMS's own message goes to stderr and the exit is 1.
set -eu
bb=/bin/busybox
port="${PORT:-8080}"

# One call of the API: TrentService.$1 with the JSON body $2. HTTP/1.0, so the KMS closes the
# connection after its answer.
call() {
    answer=$(printf 'POST / HTTP/1.0\r\nHost: kms\r\nX-Amz-Target: TrentService.%s\r\nContent-Type: application/x-amz-json-1.1\r\nContent-Length: %s\r\n\r\n%s' \
        "$1" "${#2}" "$2" | $bb nc -w 10 127.0.0.1 "$port") || {
        echo "kms-key: no answer from the KMS on port $port ($1)" >&2
        return 1
    }
    status=$(echo "$answer" | $bb head -n 1 | $bb cut -d ' ' -f 2)
    body=$(echo "$answer" | $bb sed '1,/^\r*$/d')
    if [ "$status" != 200 ]; then
        echo "kms-key: $1 failed (HTTP $status): $body" >&2
        return 1
    fi
    echo "$body"
}

# A string field of a JSON answer (the KMS's answers are one line, fields without nesting
# quotes).
field() {
    echo "$1" | $bb sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p"
}

usage() {
    echo "usage: kms-key create ALIAS | kms-key describe ALIAS" >&2
    exit 2
}

[ $# -eq 2 ] || usage
alias_name="alias/$2"
case "$1" in
create)
    key=$(call CreateKey '{"KeyUsage":"ENCRYPT_DECRYPT","Description":"perf-tests key encryption key"}')
    key_id=$(field "$key" KeyId)
    [ -n "$key_id" ] || {
        echo "kms-key: CreateKey answered without a KeyId: $key" >&2
        exit 1
    }
    call CreateAlias "{\"AliasName\":\"$alias_name\",\"TargetKeyId\":\"$key_id\"}" >/dev/null
    echo "created key $(field "$key" Arn) as $alias_name"
    ;;
describe)
    key=$(call DescribeKey "{\"KeyId\":\"$alias_name\"}")
    echo "$alias_name is key $(field "$key" Arn) ($(field "$key" KeyState))"
    ;;
*) usage ;;
esac
