import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { CopyableCode } from "../components/copy-button";
import { KeyNameFields } from "../components/key-name-fields";
import { Card, ErrorMessage } from "../components/ui";
import { adminApi } from "../lib/api";
import { formatSeoulDateTime } from "../lib/format";
import { useI18n } from "../lib/i18n";
import { inputLengthsMax } from "../lib/input-bounds";
import { useOneSubmissionAtATime } from "../lib/one-submission-at-a-time";

/**
 * Getting a user in and equipped from the console: a one-time sign-in link for a user, and a key for a user
 * or an organization. Both secrets are shown once, with a copy button, and never stored by the page.
 */

function field(form: FormData, name: string): string {
  return String(form.get(name) ?? "").trim();
}

export function SignInLinkCard() {
  const { t, language } = useI18n();
  const mint = useMutation({ mutationFn: adminApi.signInLink });
  const submitOnce = useOneSubmissionAtATime();
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const organizationId = field(form, "organizationId");
    submitOnce(() =>
      mint.mutateAsync({ userId: field(form, "userId"), ...(organizationId ? { organizationId } : {}) }),
    );
  }
  return (
    <Card title={t("signInLinkTitle")}>
      <p className="muted">{t("signInLinkHelp")}</p>
      <form className="row wrap" onSubmit={onSubmit} onChange={() => mint.reset()}>
        <label>
          {t("userId")}
          <input name="userId" required maxLength={inputLengthsMax.accountId} />
        </label>
        <label>
          {t("organizationIdOptional")}
          <input name="organizationId" maxLength={inputLengthsMax.accountId} />
        </label>
        <button type="submit" className="primary" disabled={mint.isPending}>
          {t("mintSignInLink")}
        </button>
      </form>
      <ErrorMessage error={mint.error} />
      {mint.data && (
        <div className="new-key">
          <p className="warning" role="status">
            {t("signInLinkOnce")} {formatSeoulDateTime(mint.data.expiresAt, language)}
          </p>
          <div className="row wrap">
            <CopyableCode text={mint.data.url} testId="sign-in-link" />
          </div>
        </div>
      )}
    </Card>
  );
}

export function IssueKeyCard() {
  const { t } = useI18n();
  const client = useQueryClient();
  const [kind, setKind] = useState<"user" | "organization">("user");
  const issue = useMutation({
    mutationFn: adminApi.issueKey,
    onSuccess: () => void client.invalidateQueries({ queryKey: ["admin"] }),
  });
  const submitOnce = useOneSubmissionAtATime();
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const issuedForUserId = field(form, "issuedForUserId");
    submitOnce(() =>
      issue.mutateAsync({
        account: `${kind}:${field(form, "accountId")}`,
        name: field(form, "name"),
        description: field(form, "description"),
        ...(kind === "organization" && issuedForUserId ? { issuedForUserId } : {}),
      }),
    );
  }
  return (
    <Card title={t("adminIssueKeyTitle")}>
      <form className="row wrap" onSubmit={onSubmit} onChange={() => issue.reset()}>
        <label>
          {t("kind")}
          <select value={kind} onChange={(event) => setKind(event.target.value as "user" | "organization")}>
            <option value="user">{t("personal")} (user)</option>
            <option value="organization">{t("organization")} (organization)</option>
          </select>
        </label>
        <label>
          {t("accountId")}
          <input name="accountId" required maxLength={inputLengthsMax.accountId} />
        </label>
        {kind === "organization" && (
          <label>
            {t("issuedForUser")}
            <input name="issuedForUserId" required maxLength={inputLengthsMax.accountId} />
          </label>
        )}
        <KeyNameFields />
        <button type="submit" className="primary" disabled={issue.isPending}>
          {t("issue")}
        </button>
      </form>
      <ErrorMessage error={issue.error} />
      {issue.data && (
        <div className="new-key">
          <p className="warning" role="status">
            {t("newKeyWarning")}
          </p>
          <div className="row wrap">
            <CopyableCode text={issue.data.key} testId="admin-new-key" />
          </div>
        </div>
      )}
    </Card>
  );
}
