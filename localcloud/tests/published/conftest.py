# Published material, kept as published: some of it has test files of its own (for its
# authors' setup, not this one); none of them is collected here.
collect_ignore_glob = ["*"]
