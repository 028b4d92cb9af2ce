module github.com/mnemo-dev/mnemo

go 1.26.8
