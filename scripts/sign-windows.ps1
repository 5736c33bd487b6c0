# Signs one file of a Windows bundle: tauri.conf.json's bundle.windows.signCommand runs it
# for each executable and installer the bundler makes, with the file's path as its argument.
#
# With a code-signing certificate in WINDOWS_CERTIFICATE (a PFX, base64) and its password in
# WINDOWS_CERTIFICATE_PASSWORD (the release workflow passes the secrets of those names when
# they are set), signtool signs the file with a SHA-256 digest and an RFC 3161 timestamp
# (WINDOWS_TIMESTAMP_URL, default DigiCert's). Without one it signs nothing, says so and
# succeeds: an unsigned build still installs, and SmartScreen warns about it (README:
# Building installers). A certificate kept in a cloud HSM (Azure Trusted Signing, an EV
# token) needs its own tool here instead of signtool /f.
param([Parameter(Mandatory = $true)][string]$File)
$ErrorActionPreference = 'Stop'
if (-not $env:WINDOWS_CERTIFICATE) {
  Write-Host "not signed (no WINDOWS_CERTIFICATE): $File"
  exit 0
}
$signtool = Get-ChildItem "${env:ProgramFiles(x86)}\Windows Kits\10\bin\*\x64\signtool.exe" -ErrorAction SilentlyContinue |
  Sort-Object { [version]$_.Directory.Parent.Name } |
  Select-Object -Last 1
if (-not $signtool) { throw "signtool.exe not found: install the Windows 10/11 SDK" }
$timestamp = if ($env:WINDOWS_TIMESTAMP_URL) { $env:WINDOWS_TIMESTAMP_URL } else { 'http://timestamp.digicert.com' }
$pfx = Join-Path ([IO.Path]::GetTempPath()) "hark-signing-$PID.pfx"
[IO.File]::WriteAllBytes($pfx, [Convert]::FromBase64String($env:WINDOWS_CERTIFICATE))
try {
  & $signtool.FullName sign /f $pfx /p $env:WINDOWS_CERTIFICATE_PASSWORD /fd SHA256 /tr $timestamp /td SHA256 /d Hark $File
  if ($LASTEXITCODE -ne 0) { throw "signtool failed ($LASTEXITCODE) on $File" }
} finally {
  Remove-Item -Force -ErrorAction SilentlyContinue $pfx
}
