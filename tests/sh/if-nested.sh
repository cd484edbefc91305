# nested ifs and conditions that are lists
if true && false; then echo a; elif true || false; then
  if ! false; then echo nested; fi
fi
