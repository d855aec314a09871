/* Runs the gpuws binary for CLI rows (test_bad_input, test_faults, test_cli_arguments; ctest passes its path in
 * GPUWS_CLI), and other programs the suites start (test_kernel_examples). */
#ifndef GPUWS_TEST_RUN_CLI_H
#define GPUWS_TEST_RUN_CLI_H

#include "support.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs the program at path as arg0 with argv (after argv[0], NULL-terminated; NULL for none) and env (NAME=value,
 * NULL-terminated; NULL for none) added to the environment, in directory dir (NULL: this one), killed by SIGALRM
 * after timeout_s seconds (0: never); with clean_env, GPUWS_BACKEND, GPUWS_DEVICE and GPUWS_OPENCL_PLATFORM
 * are unset first. Returns its exit code (or 128 + signal) and its stdout and stderr together
 * (malloc'd). */
static int test_run_program_in(const char *path, const char *arg0, const char *dir, unsigned timeout_s,
                               const char *const *argv, const char *const *env, bool clean_env, char **output)
{
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        if (dir && chdir(dir) != 0) _exit(127);
        if (clean_env) {
            unsetenv("GPUWS_BACKEND");
            unsetenv("GPUWS_DEVICE");
            unsetenv("GPUWS_OPENCL_PLATFORM");
        }
        for (int i = 0; env && env[i]; i++) putenv((char *)env[i]);
        const char *args[16] = { arg0 };
        int n = 1;
        for (int i = 0; argv && argv[i] && n < 15; i++) args[n++] = argv[i];
        args[n] = NULL;
        alarm(timeout_s); /* kept across execv */
        execv(path, (char *const *)args);
        _exit(127);
    }
    close(fd[1]);
    size_t cap = 4096, len = 0;
    char *out = malloc(cap);
    ssize_t r;
    while ((r = read(fd[0], out + len, cap - len - 1)) > 0) {
        len += (size_t)r;
        if (cap - len < 1024) out = realloc(out, cap *= 2);
    }
    out[len] = 0;
    close(fd[0]);
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    *output = out;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

static int test_run_program(const char *path, const char *const *argv, const char *const *env, bool clean_env,
                            char **output)
{
    return test_run_program_in(path, path, NULL, 0, argv, env, clean_env, output);
}

/* Runs the CLI with argv (after "gpuws") and env (NAME=value; GPUWS_BACKEND, GPUWS_DEVICE and GPUWS_OPENCL_PLATFORM
 * are unset first) in directory dir (NULL: this one), killed after timeout_s seconds (0:
 * never); returns its exit code (or 128 + signal) and its output (malloc'd). */
static int test_run_cli_in(const char *dir, unsigned timeout_s, const char *const *argv, const char *const *env,
                           char **output)
{
    const char *cli = getenv("GPUWS_CLI");
    if (!cli || !*cli) cr_skip_test("GPUWS_CLI is not set (run through ctest)");
    return test_run_program_in(cli, "gpuws", dir, timeout_s, argv, env, true, output);
}

static int test_run_cli(const char *const *argv, const char *const *env, char **output)
{
    return test_run_cli_in(NULL, 0, argv, env, output);
}

#endif
